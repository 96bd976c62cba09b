//! The Redis Streams bridge: a channel appended to a stream (`XADD`), and a consumer group
//! feeding a channel. See [`bridge`](crate::bridge).
