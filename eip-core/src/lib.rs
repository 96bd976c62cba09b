//! # eip-core
//!
//! The message model and the in-process runtime of eip, a framework for Enterprise Integration
//! Patterns. This crate has no network I/O: adapters and broker bridges live in `eip-adapters`,
//! flow files and the `eip` tool in `eip-dsl`.
//!
//! - [`message`]: the [`Message`] (id, typed headers, payload) and its death record.
//! - [`channel`]: Point-to-Point, Publish-Subscribe, Datatype, Dead Letter and Invalid Message
//!   channels, deliveries and acknowledgement, selective consumers, purging, expiration.
//! - [`endpoint`]: consumers that drive a `tower::Service<Message>`, with redelivery.
//! - [`bus`]: the Message Bus, a registry of hierarchical channel names with wildcard
//!   subscriptions, and Request-Reply.
//! - [`predicate`]: predicates over messages (JSONPath, headers, subject), parsed once.
//! - [`router`]: the Content-Based Router, Message Filter, Recipient List and Wire Tap.
//! - [`join`]: channel joins, with hop counts, loop detection and archival joins.
//! - [`topic`]: the `*` / `#` topic matcher shared by wildcard subscriptions and the topic
//!   exchange.
//! - [`log`]: text from outside escaped for log lines.
//!
//! Modules depend one way, each on those below it only: `message` and `log` use nothing; `store` uses
//! `message`; `channel` uses `store` and `message`; `endpoint`, `join` and `topic` use `channel`
//! and below; `predicate` uses `topic` and below; `router` uses `predicate` and below; `bus`, at
//! the top, may use any. What both sides of a would-be cycle need lives in the lower module: the
//! [`RedeliveryPolicy`](channel::RedeliveryPolicy) is a channel's, routers look names up
//! through a [`TargetResolver`](router::TargetResolver) that the bus implements, and a
//! publish-subscribe channel holds the [`Join`](join::Join)s leaving it as data defined in
//! `channel`, following them through a function the `join` module attaches.
//!
//! ```
//! use eip_core::{Message, channel::PointToPoint};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let orders = PointToPoint::new("orders", 100).unwrap();
//! let mut consumer = orders.receiver();
//! orders.send(Message::new("one widget")).await.unwrap();
//! let delivery = consumer.recv().await.unwrap();
//! assert_eq!(delivery.message().payload_str(), Some("one widget"));
//! delivery.ack();
//! # }
//! ```

pub mod bus;
pub mod channel;
pub mod endpoint;
pub mod join;
pub mod log;
pub mod message;
pub mod predicate;
pub mod router;
pub mod store;
mod sync;
pub mod template;
pub mod topic;

pub use bus::MessageBus;
pub use channel::{Channel, Delivery, Outcome, Receiver};
pub use message::{Message, MessageBuilder, MessageId};
