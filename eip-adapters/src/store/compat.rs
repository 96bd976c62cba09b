//! [`connected`]: the old way to wait for broker stores, kept until its last users move to
//! [`Channel::ready`](eip_core::channel::Channel::ready).
//!
//! A flow waits on its own channels (`eip run` does); this function waits on every
//! subscription store the process opened and has not waited for yet, whoever owns it, so it
//! keeps a list of them for the whole process. Nothing in eip calls it: only code written
//! before stores were ready on their own (tests that build a store by hand) does.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

/// The subscription stores opened and not yet waited for by [`connected`].
static OPENING: Mutex<Vec<(String, watch::Receiver<bool>)>> = Mutex::new(Vec::new());

/// Notes a subscription store's first connection for [`connected`]. Entries already
/// connected, or whose store is gone, are dropped on the way, so the list stays as long as
/// the stores still connecting.
pub(super) fn opening(describe: &str, first: &watch::Receiver<bool>) {
    let mut opening = OPENING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    opening.retain(|(_, ready)| !*ready.borrow() && ready.has_changed().is_ok());
    opening.push((describe.to_owned(), first.clone()));
}

/// Waits until every broker subscription store opened so far in this process (since the
/// last call) has connected and declared what it reads, for at most `limit`; `Err` names the
/// stores still not connected.
///
/// Prefer [`Channel::ready`](eip_core::channel::Channel::ready) (or
/// [`channel::all_ready`](eip_core::channel::all_ready) over a flow's channels): it waits on
/// the stores of the channels it is asked about and no others, so two flows in one process do
/// not wait on each other.
pub async fn connected(limit: Duration) -> Result<(), Vec<String>> {
    let opening = std::mem::take(
        &mut *OPENING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let deadline = tokio::time::Instant::now() + limit;
    let mut late = Vec::new();
    for (describe, mut ready) in opening {
        let waited = tokio::time::timeout_at(deadline, ready.wait_for(|ready| *ready)).await;
        // A store dropped before it connected (its sender gone) waits for nothing.
        if waited.is_err() {
            late.push(describe);
        }
    }
    match late.is_empty() {
        true => Ok(()),
        false => Err(late),
    }
}
