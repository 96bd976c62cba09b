//! The Redis Streams bridge: a channel appended to a stream (`XADD`), and a consumer group
//! feeding a channel. See [`bridge`](crate::bridge).
//!
//! - **Out** ([`RedisStreamOutbound`], a `tower::Service<Message>`): each message is appended
//!   to a stream, a fixed key or one made from its `subject` header ([`StreamKey`]), trimmed to
//!   about `max_len` entries when asked; `Ok` once Redis answered with the entry's id.
//! - **In** ([`RedisStreamSource`], run by an [`InboundBridge`](crate::bridge::InboundBridge)):
//!   a consumer in a consumer group (the group created at each connection if missing); after
//!   each connection it first reads again the entries delivered to this consumer and never
//!   acknowledged (a bridge stopped or crashed with them in hand), then new ones, at most the
//!   bridge's window unacknowledged; each entry is `XACK`ed only once the channel took it.
//!
//! An entry's fields are the text [`envelope`](crate::bridge::envelope): `eip-id`, every eip
//! header under its own name (`subject`, `correlation-id`, `return-address`, `content-type`,
//! `expires-at`, `hop-budget`, your own), `eip-types` for those that are not strings, and the
//! payload's bytes in the field [`PAYLOAD`]. An entry from a producer that is not eip becomes a
//! message with string headers, its `payload` field (or none) as payload, and the stream key as
//! `subject` when it has none. Both halves make a fresh connection after a lost one, with
//! [`Backoff`](crate::bridge::Backoff).

mod connection;
mod entry;
mod key;
mod outbound;
mod source;

pub use key::{StreamKey, StreamKeyError};
pub use outbound::{
    Appended, RedisStreamOutbound, RedisStreamOutboundConfig, RedisStreamPublisher,
};
pub use source::{GroupStart, RedisStreamDelivery, RedisStreamSource, RedisStreamSourceConfig};

/// The stream field holding an eip message's payload.
pub const PAYLOAD: &str = "payload";
