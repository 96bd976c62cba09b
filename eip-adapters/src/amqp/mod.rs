//! The RabbitMQ (AMQP 0-9-1) bridge: a channel published to an exchange with a routing key
//! (publisher confirms), and a queue feeding a channel. See [`bridge`](crate::bridge).
//!
//! - **Out** ([`AmqpOutbound`], a `tower::Service<Message>`): each message is published
//!   persistent (delivery mode 2) to the configured exchange, with a fixed routing key or the
//!   message's `subject` ([`RoutingKey`]); the call answers `Ok` only once the broker
//!   confirmed it (publisher confirms). A negative confirm, or a message returned as
//!   unroutable (publishing is `mandatory`), is an error, so the consumer driving the adapter
//!   retries it and finally dead-letters it.
//! - **In** ([`AmqpSource`], run by an [`InboundBridge`](crate::bridge::InboundBridge)): a
//!   queue (declared durable if asked, with its bindings) consumed with a prefetch of the
//!   bridge's window and manual acks: a message is acked to RabbitMQ only once the channel
//!   accepted it. What was not acked when a connection dies is RabbitMQ's to deliver again,
//!   marked redelivered (the eip message's redelivery count is raised).
//!
//! **Headers**: the eip message id is the AMQP `message_id`; `correlation-id`,
//! `return-address` (`reply_to`), `content-type` and `priority` are the AMQP properties of the
//! same meaning; `expires-at` travels in the headers table and as the per-message TTL
//! (`expiration`, the milliseconds left when published) so RabbitMQ drops what expires while
//! queued; every other header (`subject`, `hop-budget`, your own) is a typed entry of the
//! headers table (strings, 64-bit integers, doubles, booleans, byte arrays). Coming in, the
//! routing key becomes the `subject` when the message has none. From a producer that is not
//! eip: a `message_id` that is not an eip id is kept in the header `external-id`; a TTL
//! counts from the message's AMQP `timestamp` when it has one; a decimal header arrives as a
//! float, a timestamp as an integer, an array or a table as its JSON text (`[1,"two",[3]]`).
//!
//! Both halves make a fresh connection after a lost one, with
//! [`Backoff`](crate::bridge::Backoff), rather than lean on lapin's own recovery.
//!
//! The module is named after the protocol, the flow-file kinds (`rabbitmq-in`, `rabbitmq-out`)
//! and the channel store (`rabbitmq`) after the broker: what they rely on beyond AMQP 0-9-1
//! (publisher confirms, per-message TTL, the queue arguments of the store) is RabbitMQ's.

mod connection;
mod outbound;
mod properties;
mod source;
mod values;

pub(crate) use connection::delete_queue;
pub use connection::{AmqpUrl, ExchangeDeclaration};
pub use outbound::{AmqpOutbound, AmqpOutboundConfig, AmqpPublisher, RoutingKey, RoutingKeyError};
pub use source::{AmqpDelivery, AmqpSource, AmqpSourceConfig, QueueBinding};
