//! The memory store: messages in the process, bounded by capacity, gone when it ends.
//!
//! A [`Queue`] is the store of a point-to-point channel and of each subscription. A
//! publish-subscribe channel under backpressure stores each message once, in a shared log its
//! subscriptions' queues read with cursors of their own (see `shared_log`).

mod queue;
pub(crate) mod shared_log;

pub use queue::{Overflow, Queue};
