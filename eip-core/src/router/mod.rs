//! Message routing: Content-Based Router, Message Filter, Recipient List and Wire Tap.
//!
//! Each decides where a message goes without changing it, using [`Predicate`]s (compiled once,
//! payload parsed at most once per message) or a list of channels, and none of them loses a
//! message silently. The router and the recipient list send to [`Target`]s: a channel, or a
//! [topic exchange](crate::topic::TopicExchange) that routes the message on by its subject.
//!
//! - [`ContentBasedRouter`]: ordered `when` clauses, the first whose predicate matches sends the
//!   message to its channel; else `otherwise`; else the router's dead letter channel, reason
//!   `no-route`. A router that could drop a message does not build. [`ContentBasedRouter::select`]
//!   answers "where would this go?" without side effects.
//! - [`MessageFilter`] (with [`FilterLayer`]): passes matching messages to the service it wraps;
//!   the others are dropped and counted, or sent to a discard channel.
//! - [`RecipientList`]: a copy to each of a fixed list of channels, or of the channels a header
//!   names (resolved by a [`TargetResolver`], such as the [`MessageBus`](crate::MessageBus)); a
//!   name that resolves to no channel dead-letters a copy with reason `no-route` and the error.
//! - [`WireTap`] (with [`WireTapLayer`]): a copy of each message to a tap channel, offered
//!   without waiting; the main flow never waits or fails because of the tap.
//!
//! All four are `tower::Service<Message>`s, so they compose with tower's layers and with
//! [consumers](crate::endpoint) like any other step.
//!
//! [`Predicate`]: crate::predicate::Predicate

mod content_based;
mod error;
mod filter;
mod load_balancer;
mod recipient_list;
mod target;
mod wire_tap;

pub use content_based::{
    ContentBasedRouter, ContentBasedRouterBuilder, Decision, Routed, RouterStats, WhenClause,
};
pub use error::{RouteError, RouterError};
pub use filter::{FilterError, FilterLayer, FilterStats, Filtered, MessageFilter};
pub use load_balancer::{LoadBalancer, LoadBalancerStats, NoTargets, Pick, Strategy};
pub use recipient_list::{Distribution, Recipient, RecipientList, Resolution};
pub use target::{Sent, Target, TargetResolver};
pub use wire_tap::{WireTap, WireTapLayer, WireTapStats};

type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;
