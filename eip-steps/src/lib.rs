//! The processing steps of a route.
//!
//! A route takes a message from a channel, runs it through an ordered list of steps, then
//! sends what comes out (see `eip-dsl`'s routes). Each step here is a `tower::Service` with
//! its `Layer`, so it is usable from Rust alone and composes with tower's own layers:
//!
//! - [`expr`]: jq expressions, compiled once, the language every computed value is written in
//!   (cargo feature `jq`).
//! - [`translate`]: the Message Translator: a new payload computed by jq, headers set and
//!   removed.
//! - [`error`]: what a step returns when it fails on a message, the message handed back.
//! - [`format`](mod@format): the formats a payload or a file may be in besides JSON (lines, JSON lines, CSV,
//!   XML), read part by part with bounded memory.
//! - [`split`]: the Splitter: a message per record of a payload or a stream, with the
//!   Message Sequence headers.
//! - [`aggregate`]: the Aggregator: messages correlated into groups, each released as one
//!   message when it completes (by size, time, a predicate, or every part of a split).
//! - [`resequence`]: the Resequencer: messages put back in the order of their sequence numbers.
//! - [`dedupe`]: the Idempotent Receiver: a message whose key was seen within a window goes no
//!   further.
//! - [`delay`]: the Delayer: each message waits a fixed time, or until a time it names.
//! - [`throttle`]: the Throttler: messages go on at no more than a rate, waiting for their turn.

/// A change of a step's state being made lasting (a durable store writing it); it completes
/// once the change is on disk, or fails with why.
pub type Keeping =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), tower::BoxError>> + Send>>;

pub mod aggregate;
pub mod dedupe;
pub mod delay;
pub mod error;
#[cfg(feature = "jq")]
pub mod expr;
pub mod format;
pub mod resequence;
pub mod split;
pub mod throttle;
#[cfg(feature = "jq")]
pub mod translate;
