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
//! - [`format`]: the formats a payload or a file may be in besides JSON (lines, JSON lines, CSV,
//!   XML), read part by part with bounded memory.

pub mod aggregate;
pub mod dedupe;
#[cfg(feature = "jq")]
pub mod expr;
pub mod format;
pub mod resequence;
#[cfg(feature = "jq")]
pub mod translate;
