//! Channel adapters and messaging bridges for eip.
//!
//! Each adapter connects an eip channel to something outside the process: a directory, an HTTP
//! endpoint, a database table, or a broker (RabbitMQ, NATS JetStream, MQTT, Redis Streams). Every
//! adapter sits behind its own cargo feature so a flow only compiles what it uses. The adapters
//! arrive with their own issues; this crate is the place they land.

pub use eip_core as core;
