//! Aggregator: correlated messages collected into groups, each complete group sent on as one.
//!
//! A message's group is its correlation key ([`Key`]; by default the `correlation-id` header).
//! A group completes, and its aggregate goes to the inner service, when the first of these
//! rules that is configured holds: it reached a **size**; it holds **all parts** of a split
//! (some part carried `sequence-size` N and every `sequence-number` 1..=N is present); a
//! caller's **predicate** over its messages says so. A **timeout** since the group's first
//! message gives a group up without a new message arriving (a tokio task owned by the
//! aggregator, stopped when its last clone is dropped); a group given up is, as configured
//! ([`Incomplete`]), released as it is or handed to the dead letters with reason `incomplete`.
//!
//! The aggregate has a new id, `correlation-id` set to the group's key, the other headers of
//! the group's first message (without its `sequence-number` and `sequence-size`), and a
//! payload made by the caller's combine function or, by default, a JSON array of the payloads
//! parsed as JSON (content type `application/json`). Messages are combined in sequence-number
//! order when every message of the group carries one, otherwise in arrival order; the "first"
//! message is the first in that order. A part whose sequence number its group holds already is
//! a duplicate: counted and ignored; so is a numbered part of a split that completed by "all
//! parts" already (the store remembers the last 10 000 such keys), so a late copy does not
//! open a new group. A message whose key or sequence headers can not be read
//! is handed back as [`AggregateError::Invalid`] with the reason (a permanent error).
//!
//! When its flow stops, the owner calls [`Aggregator::stop`]: every group still open is
//! released, dead-lettered, dropped or kept, as [`OnStop`] says (released by default, so
//! nothing is lost without a word).
//!
//! Memory is bounded by a number of open groups (10 000 by default): a message that would open
//! one more either makes the aggregator give up its oldest group (the default, following the
//! [`Incomplete`] setting; counted in `overflowed`) or is refused ([`Overflow::Refuse`]).
//!
//! Acknowledgement: a call completes when what the message became was accepted. A held message
//! completes at once, held in memory counting as accepted (a durable [`GroupStore`] will make
//! holding one commit with the input's ack); a completing message when the inner service took
//! the aggregate. [`Aggregator::peek`] answers, changing nothing, what a message would do
//! ("held in group G, 3 of 10"); the service carries out the same decision.
//!
//! The header names `sequence-number` and `sequence-size` are eip-core's Message Sequence
//! headers, re-exported here as [`SEQUENCE_NUMBER`] and [`SEQUENCE_SIZE`].
//!
//! ```
//! use eip_core::{Message, channel::PointToPoint};
//! use eip_steps::aggregate::{Aggregated, Aggregator};
//! use tower::{Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let batches = PointToPoint::new("batches", 10).unwrap();
//! let config = Aggregator::builder().complete_at_size(2).build().unwrap();
//! let mut agg = Aggregator::new(batches.sender(), config);
//! for n in [1, 2] {
//!     let msg = Message::builder(format!("{n}")).correlation_id("sensor-7").build();
//!     let done = agg.ready().await.unwrap().call(msg).await.unwrap();
//!     assert_eq!(matches!(done, Aggregated::Released { .. }), n == 2);
//! }
//! let mut rx = batches.receiver();
//! let batch = rx.recv().await.unwrap();
//! assert_eq!(batch.message().payload_str(), Some("[1,2]"));
//! assert_eq!(batch.message().correlation_id().unwrap(), Some("sensor-7"));
//! # }
//! ```

mod config;
mod dead_letter;
mod decision;
mod error;
mod group;
mod key;
mod release;
mod service;
mod state;
mod stats;
mod stop;
mod timer;

pub use config::{
    AggregatorBuilder, AggregatorConfig, CombineFn, CompletionFn, ConfigError, ConfigProblem,
    Incomplete, OnStop, Overflow, Rule,
};
pub use dead_letter::{DeadLetters, INCOMPLETE, INVALID, IncompleteGroup};
pub use decision::{Decision, Refusal};
pub use error::AggregateError;
pub use group::{Added, Group, GroupRules, GroupStore, InMemoryGroups, Part};
pub use key::{Key, KeyError, KeyFn};
pub use service::{AggregateFuture, Aggregated, Aggregator, AggregatorLayer};
pub use stats::AggregatorStats;
pub use stop::Stopped;

pub use eip_core::message::names::SEQUENCE_NUMBER;
pub use eip_core::message::names::SEQUENCE_SIZE;
