//! Broker-backed channels: a channel whose messages live in a broker, so that every process
//! attached to it shares them (the way a deployment grows past one machine).
//!
//! A [`Backend`](eip_core::store::Backend) of this module gives a channel stores that keep
//! nothing of their own but a window: the broker holds the messages.
//! - **Sending** publishes to the broker and completes once the broker confirmed (a RabbitMQ
//!   publisher confirm, a JetStream ack), so a send that completed survives this process.
//!   While the broker can not be reached the send waits and tries again, for at most the
//!   backend's `retry_for`, then fails with the broker's error; a refusal that will not change
//!   (a declaration the broker refuses) fails it at once.
//! - **Receiving** reads the broker's queue or durable consumer into a local window of the
//!   channel's capacity (the broker's prefetch), and acknowledges a message to the broker only
//!   when its consumer acknowledged it on the channel. A message dead-lettered, discarded or
//!   purged here is acknowledged too (it left the channel another way). What is waiting here
//!   or in flight when the process dies is the broker's to deliver again, to this process or
//!   another one: at least once.
//! - **Point-to-point** channels are competing consumers across processes: every process reads
//!   the same queue (RabbitMQ) or the same durable consumer (JetStream).
//! - **Publish-subscribe** channels publish once to the broker, which fans out: each durable
//!   subscription is a queue bound to the channel's fanout exchange, or a durable consumer of
//!   the channel's stream, so subscribers in other processes get their copies; processes
//!   that subscribe under one name compete for that subscription's messages.
//! - A redelivery asked for on the channel (a nack, a failed attempt) stays in this process
//!   with its count raised; a message the broker delivers again after a lost connection or a
//!   dead process comes marked redelivered.
//! - Closing the channel in one process (deleting it) stops this process reading; what it
//!   held goes back to the broker for the others, so nothing is dead-lettered for it.
//! - **Ready.** A subscription's store connects and declares what it reads (its queue and
//!   binding, its durable consumer) in the background, and sees only what is published after
//!   that. Its [`ready`](eip_core::store::MessageStore::ready) waits for that first
//!   connection, so whoever owns the channel (a flow, through
//!   [`Channel::ready`](eip_core::channel::Channel::ready)) waits on its own stores and names
//!   those that did not connect. Nothing in the process is shared between two flows.
//!
//! The connection is the store's own: it connects in the background, and after a lost
//! connection connects again with a backoff and declares again what it declares.
//!
//! # Layout
//! One module per broker ([`RabbitMq`], [`JetStream`]): how that broker keeps a channel and
//! its subscriptions, behind [`Backend`](eip_core::store::Backend). What every broker store
//! shares (the window, publishing with confirms, reading and acknowledging) is the `broker`
//! module, which a new broker uses through two small traits: something that publishes with a
//! confirm, and a [`Source`](crate::bridge::Source) to read.

mod broker;
#[cfg(feature = "nats")]
mod jetstream;
#[cfg(feature = "amqp")]
mod rabbitmq;

pub use broker::{BrokerStore, DEFAULT_PUBLISH_WINDOW, DEFAULT_RETRY_FOR, ENVELOPE_ERROR};
#[cfg(feature = "nats")]
pub use jetstream::JetStream;
#[cfg(feature = "amqp")]
pub use rabbitmq::RabbitMq;
