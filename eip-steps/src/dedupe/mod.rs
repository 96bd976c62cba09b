//! Idempotent Receiver: a message whose key was seen within a window is a duplicate.
//!
//! Each message's key comes from a [`Key`](crate::aggregate::Key): by default the message id
//! (so a redelivered copy is caught), or a header, or a caller's function (the DSL plugs jq
//! in). A message whose key can not be computed is handed back invalid with the reason. A key
//! seen less than `window` ago makes the message a duplicate: dropped and counted (a
//! successful outcome, so a consumer acks it), or diverted to a channel or a callback
//! ([`OnDuplicate`]). Otherwise the key is recorded and the message passed on.
//!
//! - **The window edge.** A key seen exactly `window` ago has expired: the message passes. One
//!   seen a moment less than `window` ago is a duplicate. A duplicate does not move the time a
//!   key was seen, so the window runs from the original.
//! - **Bounded memory.** At most `max_keys` keys (100 000 by default) are kept; recording one
//!   more first drops keys past the window, then the oldest, so the oldest expire first.
//! - **Acknowledgement.** The key is recorded when the message arrives (so a concurrent copy
//!   is caught), and forgotten again if the inner service refuses the original, so that its
//!   redelivery is not taken for a duplicate. Once the inner service took the original, the
//!   store [keeps](SeenStore::keep) the key (a durable one writes it to disk), and only then
//!   does the call complete, so the message is acknowledged after its key is safe.
//!
//! [`IdempotentReceiver::peek`] gives the decision without recording anything.
//!
//! ```
//! use std::time::Duration;
//! use eip_core::{Message, channel::PointToPoint};
//! use eip_steps::dedupe::{DedupeConfig, Deduped, IdempotentReceiver};
//! use tower::{Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let orders = PointToPoint::new("orders", 10).unwrap();
//! let mut dedupe = IdempotentReceiver::new(orders.sender(), DedupeConfig::new(Duration::from_secs(60)));
//! let order = Message::new("one widget");
//! let first = dedupe.ready().await.unwrap().call(order.clone()).await.unwrap();
//! assert!(matches!(first, Deduped::Passed(_)));
//! let again = dedupe.ready().await.unwrap().call(order).await.unwrap();
//! assert_eq!(again, Deduped::Dropped);
//! assert_eq!(dedupe.stats().duplicates, 1);
//! # }
//! ```

mod service;
mod store;

pub use service::{
    Decision, DedupeConfig, DedupeError, DedupeStats, Deduped, IdempotentReceiver,
    IdempotentReceiverLayer, OnDuplicate,
};
pub use store::{InMemorySeen, Keeping, Seen, SeenStore};
