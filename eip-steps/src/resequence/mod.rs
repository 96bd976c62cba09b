//! Resequencer: messages that arrive out of order sent on in the order of their numbers.
//!
//! Each message's sequence number comes from a [`Key`](crate::aggregate::Key) (by default the
//! `sequence-number` header), a whole number from 1; a message without a readable one is handed
//! back invalid with the reason. The resequencer releases number `next` (1 at first) as soon as
//! it arrives, followed by every consecutive number it held, and holds any higher number.
//!
//! - **Gaps.** With a gap timeout, a gap waited on that long is given up: everything held goes
//!   out in order (skipping every gap), each gap counted in `gaps` and the numbers it skipped in
//!   `missing`. This happens without a new message (a tokio task owned by the resequencer,
//!   stopped when its last clone is dropped). The wait is measured from when the resequencer
//!   started holding messages behind the current gap.
//! - **Bounded memory.** At most `max_held` messages (10 000 by default) are held: one more makes
//!   it give up the first gap and release the run after it, in order (counted in `overflows`).
//! - **Duplicates.** A number released already, or held already, is dropped and counted in
//!   `duplicates`. A number skipped by a gap given up that arrives after all is not a duplicate:
//!   it goes on at once, out of order, counted in `late` (the last 1 024 skipped gaps are
//!   remembered; an older one counts as a duplicate).
//!
//! Released messages reach the inner service strictly in order, across concurrent calls: each
//! batch waits for the batch released before it. A call completes when its message is held (in
//! memory, held counts as accepted) or, when it released messages, when the inner service took
//! all of them. [`Resequencer::peek`] gives the decision without changing anything.
//!
//! A store that keeps its state on disk ([`SequenceStore::keeps`]) makes each hold and each
//! released run lasting ([`SequenceStore::keep_held`], [`SequenceStore::keep_released`]); a
//! call then completes once that is done, and a released message the inner service refused is
//! kept by the store rather than dropped ([`Resequenced::Kept`]). Built from what such a store
//! read back, [`Resequencer::resume`] sends what it had as released and not sent, and starts
//! the gap timer.
//!
//! ```
//! use eip_core::{Message, channel::PointToPoint};
//! use eip_steps::resequence::{Resequencer, ResequencerConfig};
//! use tower::{Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let ordered = PointToPoint::new("ordered", 10).unwrap();
//! let mut reseq = Resequencer::new(ordered.sender(), ResequencerConfig::new());
//! for n in [2_i64, 3, 1] {
//!     let msg = Message::builder(format!("{n}")).header("sequence-number", n).build();
//!     reseq.ready().await.unwrap().call(msg).await.unwrap();
//! }
//! let mut rx = ordered.receiver();
//! for want in ["1", "2", "3"] {
//!     let delivery = rx.recv().await.unwrap();
//!     assert_eq!(delivery.message().payload_str(), Some(want));
//!     delivery.ack();
//! }
//! # }
//! ```

mod decision;
mod service;
mod store;

pub use decision::{Decision, ResequencerConfig};
pub use service::{
    ResequenceError, ResequenceFuture, Resequenced, Resequencer, ResequencerLayer, ResequencerStats,
};
pub use store::{InMemorySequence, Released, SKIPPED_REMEMBERED, SequenceStore, Skipped};
