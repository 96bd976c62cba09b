//! The NATS JetStream bridge: a channel published to a subject (JetStream publish acks), and a
//! durable pull consumer feeding a channel. See [`bridge`](crate::bridge).
