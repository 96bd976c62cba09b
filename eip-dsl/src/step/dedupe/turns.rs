//! One message per key at a time: the turns a dedupe step hands out on a route that processes
//! several messages at once (`concurrency:`).
//!
//! A message takes its key's turn before the idempotent receiver sees it, and gives it back
//! once the receiver settled its outcome: passed on and its key kept (on a durable route, in
//! the commit that acknowledges it), or refused and its key forgotten. A copy arriving while
//! the original is in progress waits for that turn, so it is judged by the original's
//! outcome: a duplicate if the original was accepted, an original itself if it was not. Turns
//! are handed out in the order asked for; a key nobody holds or waits for takes no memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::OwnedMutexGuard;

/// The keys in progress, each with the turn its messages queue for.
#[derive(Debug, Default)]
pub(super) struct Turns {
    keys: Mutex<HashMap<String, Queue>>,
}

#[derive(Debug, Default)]
struct Queue {
    turn: Arc<tokio::sync::Mutex<()>>,
    /// The messages holding or waiting for the turn.
    users: usize,
}

/// A key's turn, held (or waited for) by one message; given back when dropped.
pub(super) struct Turn<'a> {
    turns: &'a Turns,
    key: String,
    held: Option<OwnedMutexGuard<()>>,
}

impl Turns {
    fn keys(&self) -> MutexGuard<'_, HashMap<String, Queue>> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until no other message holds `key`'s turn, and takes it.
    pub(super) async fn take(&self, key: String) -> Turn<'_> {
        let turn = {
            let mut keys = self.keys();
            let queue = keys.entry(key.clone()).or_default();
            queue.users += 1;
            queue.turn.clone()
        };
        // Counted before the wait, so that a wait given up still gives its place back.
        let mut taken = Turn {
            turns: self,
            key,
            held: None,
        };
        taken.held = Some(turn.lock_owned().await);
        taken
    }

    /// How many keys are held or waited for.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.keys().len()
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        // The next message waiting for the key goes first; the key is forgotten after the last.
        drop(self.held.take());
        let mut keys = self.turns.keys();
        if let Some(queue) = keys.get_mut(&self.key) {
            queue.users -= 1;
            if queue.users == 0 {
                keys.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_second_message_of_a_key_waits_until_the_first_gives_its_turn_back() {
        let turns = Turns::default();
        let first = turns.take("a".into()).await;
        let other = turns.take("b".into()).await;
        let second = turns.take("a".into());
        tokio::pin!(second);
        assert!(
            futures::poll!(&mut second).is_pending(),
            "the second took a held turn"
        );
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(10), second)
            .await
            .expect("the turn came");
        drop((second, other));
        assert_eq!(turns.len(), 0, "keys nobody holds are forgotten");
    }

    #[tokio::test]
    async fn a_wait_given_up_gives_its_place_back() {
        let turns = Turns::default();
        let first = turns.take("a".into()).await;
        let mut given_up = Box::pin(turns.take("a".into()));
        assert!(futures::poll!(&mut given_up).is_pending());
        drop(given_up);
        drop(first);
        assert_eq!(turns.len(), 0);
    }
}
