//! Channel adapters and messaging bridges for eip.
//!
//! Each adapter connects an eip channel to something outside the process: a directory, an HTTP
//! endpoint, a database table, or a broker (RabbitMQ, NATS JetStream, MQTT, Redis Streams). Every
//! adapter sits behind its own cargo feature so a flow only compiles what it uses.
//!
//! Two shapes, whatever the adapter:
//! - an **outbound** adapter is a `tower::Service<Message>`: a consumer endpoint
//!   ([`eip_core::endpoint::Consumer`]) drives it from a channel; `Ok` acks the message, `Err`
//!   applies the channel's redelivery policy and finally dead-letters it with the error;
//! - an **inbound** adapter feeds a channel through its sender, honouring `poll_ready` (a full
//!   channel stops the adapter reading: backpressure reaches the source), and settles with its
//!   source (renames the file, answers the HTTP request, marks the row) only after the channel
//!   accepted the message (for a durable channel: once it is on disk).

pub use eip_core as core;

pub mod env;
mod hex;

#[cfg(feature = "amqp")]
pub mod amqp;
#[cfg(any(
    feature = "amqp",
    feature = "nats",
    feature = "mqtt",
    feature = "redis"
))]
pub mod bridge;
#[cfg(feature = "file")]
pub mod file;
pub mod health;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "mqtt")]
pub mod mqtt;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sql")]
pub mod sql;
#[cfg(any(feature = "amqp", feature = "nats"))]
pub mod store;
#[cfg(feature = "timer")]
pub mod timer;
