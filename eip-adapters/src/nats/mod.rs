//! The NATS JetStream bridge: a channel published to a subject (JetStream publish acks), and a
//! durable pull consumer feeding a channel. See [`bridge`](crate::bridge).
//!
//! - **Out** ([`JetStreamOutbound`], a `tower::Service<Message>`): each message is published to
//!   a subject, fixed or made from its `subject` header ([`SubjectTemplate`]: eip routing keys
//!   are NATS subjects), with `Nats-Msg-Id` = its eip id so JetStream drops a retried publish
//!   within the stream's duplicate window; `Ok` once JetStream acked it.
//! - **In** ([`JetStreamSource`], run by an [`InboundBridge`](crate::bridge::InboundBridge)): a
//!   durable pull consumer with explicit acks and `max_ack_pending` = the bridge's window; each
//!   message is double-acked (the server confirms the ack) only once the channel took it.
//!
//! Headers travel as NATS headers through the text [`envelope`](crate::bridge::envelope): the
//! id as `eip-id`, every eip header under its own name (`subject`, `correlation-id`,
//! `return-address`, `content-type`, `expires-at`, `hop-budget`, your own), and the types of
//! those that are not strings in `eip-types`. JetStream's own `Nats-…` headers stay out of the
//! eip message. Both halves declare what they need at each connection: the stream (created if
//! missing, when given subjects) and, inbound, the durable consumer (created or updated).
//! Both make a fresh connection after a lost one, with [`Backoff`](crate::bridge::Backoff),
//! rather than lean on the client's own reconnection.

mod connection;
mod outbound;
mod pull;
mod source;
mod subject;

pub use connection::{Retention, StreamDeclaration};
pub(crate) use connection::{delete_consumer, describe as describe_url};
pub use outbound::{JetStreamOutbound, JetStreamOutboundConfig, JetStreamPublisher, Published};
pub use source::{JetStreamDelivery, JetStreamSource, JetStreamSourceConfig};
pub use subject::{SubjectError, SubjectTemplate};
