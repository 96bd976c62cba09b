//! Replay: a dead letter sent back to the channel it died on, keeping its id.

use std::collections::{HashSet, VecDeque};

use super::{BusError, MessageBus, ReplayError};
use crate::channel::{Delivery, Outcome, PointToPoint, Selector};
use crate::message::{Message, MessageId, names};
use crate::store::{Select, Take};

/// The header a replayed message carries: how many times it was replayed.
pub const REPLAYED: &str = "replayed";

/// How many dead letters a replay takes from the store at a time.
const REPLAY_BATCH: usize = 64;

/// Which waiting dead letters to replay or delete.
#[derive(Debug)]
pub enum Which {
    /// Those with these ids.
    Ids(HashSet<MessageId>),
    /// Those the selector selects (a predicate over the message and its death record).
    Matching(Selector),
    /// Every one.
    All,
}

impl Select for Which {
    fn selects(&self, msg: &Message) -> bool {
        match self {
            Which::Ids(ids) => ids.contains(&msg.id()),
            Which::Matching(selector) => selector.matches(msg),
            Which::All => true,
        }
    }
}

impl Which {
    /// Deletes the waiting dead letters on `channel` it selects; how many.
    pub fn delete_from(&self, channel: &PointToPoint) -> usize {
        channel.queue().store.purge(Some(self))
    }
}

/// A dead letter replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// Its id, which the replayed message keeps.
    pub id: MessageId,
    /// The channel it went back to (where it died).
    pub channel: String,
    /// Set when it did not fit that channel's datatype: it went on to the invalid message
    /// channel, with this reason.
    pub invalid: Option<String>,
}

/// A dead letter not replayed, left where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReplayed {
    /// Its id.
    pub id: MessageId,
    /// Why.
    pub reason: String,
}

/// What a [`MessageBus::replay_dead_letters`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// The dead letters replayed, in the order taken.
    pub replayed: Vec<Replayed>,
    /// Those not replayed: each left on the dead letter channel.
    pub failed: Vec<NotReplayed>,
    /// For [`Which::Ids`]: the ids no dead letter waiting had (none was replayed for them).
    pub missing: Vec<MessageId>,
}

/// The message a replay of `dead` sends, and the channel it goes to; `None` without a death
/// record.
pub fn replay_copy(dead: &Message) -> Option<(String, Message)> {
    let record = dead.death().ok().flatten()?;
    let mut msg = dead.clone();
    let replays = msg.headers().get(REPLAYED).and_then(|v| v.as_int());
    let replays = replays.unwrap_or(0).max(0).saturating_add(1);
    let headers = msg.headers_mut();
    headers.remove(names::REDELIVERY_COUNT);
    headers.insert(REPLAYED, replays);
    Some((record.channel, msg))
}

/// A selection that passes over the dead letters a replay has seen already.
struct Unseen<'a> {
    which: &'a Which,
    seen: &'a HashSet<MessageId>,
}

impl Select for Unseen<'_> {
    fn selects(&self, msg: &Message) -> bool {
        !self.seen.contains(&msg.id()) && self.which.selects(msg)
    }
}

impl MessageBus {
    /// Sends a dead letter back to the channel it died on, then acks it.
    ///
    /// [`MessageBus::replay`] replays one delivery a consumer took from a dead letter channel;
    /// [`MessageBus::replay_dead_letters`] replays, straight from a dead letter channel's store,
    /// the waiting dead letters a [`Which`] selects: some ids, those a selector selects, or all.
    ///
    /// - **The same message.** The replayed message keeps its id, payload and headers, and its
    ///   death record (a second death on the same channel for the same reason counts on). Its
    ///   `redelivery-count` is removed (it gets a fresh set of attempts under the channel's
    ///   redelivery policy) and the header [`REPLAYED`] counts its replays: 1 the first time, 2 if
    ///   it dies and is replayed again.
    /// - **Acknowledged once accepted.** A dead letter leaves its channel only once the channel it
    ///   died on took the message back: stored it (on disk, for a durable channel) or, the
    ///   message not fitting that channel's datatype, sent it on to the invalid message channel.
    ///   A process that crashes in between delivers both again: at least once, never lost.
    /// - **A failed replay leaves the dead letter.** Unknown channel, a channel deleted or full
    ///   past its store's limit, no death record to say where it died, or a channel that takes
    ///   part in joins and still remembers the id (loop detection would drop the copy): the dead
    ///   letter goes back to the head of its channel, unchanged (its redelivery count too), and
    ///   the failure says why.
    /// - **Bounded.** [`Which::All`] and [`Which::Matching`] replay at most as many dead letters
    ///   as were waiting when the replay began, each at most once: a message that dies again at
    ///   once is not replayed again by the same call. A durable dead letter channel is looked
    ///   through from its head, as far as a selective consumer looks
    ///   ([`SELECTOR_WINDOW`](crate::store::durable::SELECTOR_WINDOW)).
    ///
    /// On failure the delivery comes back unsettled with the error, for the caller to decide:
    /// ack it (give up), reject it elsewhere, or drop it (it is requeued at the head).
    pub async fn replay(&self, delivery: Delivery) -> Result<Outcome, Box<ReplayError>> {
        let Some((channel, msg)) = replay_copy(delivery.message()) else {
            let id = delivery.message().id().to_string();
            let error = BusError::NotADeadLetter { id };
            return Err(Box::new(ReplayError { error, delivery }));
        };
        match self.send(&channel, msg).await {
            Ok(outcome) => {
                delivery.ack();
                Ok(outcome)
            }
            Err(error) => Err(Box::new(ReplayError { error, delivery })),
        }
    }

    /// Replays the dead letters waiting on `dead_letters` that `which` selects, each to the
    /// channel it died on, in the order they wait (see [`MessageBus::replay`]). Each is acked
    /// once its channel accepted it; those that fail go back to the head of `dead_letters`
    /// together, in their order, once the replay is done.
    pub async fn replay_dead_letters(
        &self,
        dead_letters: &PointToPoint,
        which: &Which,
    ) -> ReplayReport {
        let lane = dead_letters.queue();
        let budget = match which {
            Which::Ids(ids) => ids.len(),
            Which::Matching(_) | Which::All => lane.store.stats().depth,
        };
        let mut report = ReplayReport::default();
        let mut seen = HashSet::new();
        let mut held = VecDeque::new();
        while seen.len() < budget {
            let mut batch = VecDeque::new();
            let unseen = Unseen { which, seen: &seen };
            let max = (budget - seen.len()).min(REPLAY_BATCH);
            if lane.store.try_take(Some(&unseen), max, &mut batch) != Take::Taken {
                break;
            }
            for dead in batch {
                seen.insert(dead.id());
                match self.replay_one(&dead).await {
                    Ok(replayed) => {
                        lane.store.settle(&dead);
                        report.replayed.push(replayed);
                    }
                    Err(reason) => {
                        report.failed.push(NotReplayed {
                            id: dead.id(),
                            reason,
                        });
                        held.push_back(dead);
                    }
                }
            }
        }
        lane.unprefetch(&mut held);
        if let Which::Ids(ids) = which {
            report.missing = ids
                .iter()
                .filter(|id| !seen.contains(id))
                .copied()
                .collect();
            report.missing.sort();
        }
        report
    }

    /// Sends the replay copy of `dead` to where it died: what became of it, or why not.
    async fn replay_one(&self, dead: &Message) -> Result<Replayed, String> {
        let Some((channel, msg)) = replay_copy(dead) else {
            return Err("it has no death record saying which channel it died on".to_owned());
        };
        let id = dead.id();
        match self.send(&channel, msg).await {
            Ok(Outcome::Accepted) => Ok(Replayed {
                id,
                channel,
                invalid: None,
            }),
            Ok(Outcome::Invalid { reason }) => Ok(Replayed {
                id,
                channel,
                invalid: Some(reason),
            }),
            Ok(Outcome::Duplicate) => Err(format!(
                "`{channel}` takes part in joins and still remembers this id (loop detection \
                 would not store it again): replay it once the channel has forgotten it"
            )),
            Err(error) => Err(format!("`{channel}` did not take it: {error}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{DeathReason, DeathRecord};

    fn dead(channel: &str) -> Message {
        let mut msg = Message::new("order 7");
        msg.set_death(&DeathRecord::new(channel, DeathReason::Rejected, None));
        msg.mark_redelivered();
        msg
    }

    #[test]
    fn a_replay_copy_keeps_the_id_and_counts_its_replays() {
        let first = dead("orders");
        let (channel, copy) = replay_copy(&first).expect("a dead letter");
        assert_eq!(channel, "orders");
        assert_eq!(copy.id(), first.id());
        assert_eq!(copy.redelivery_count().ok(), Some(0));
        assert_eq!(
            copy.headers().get(REPLAYED).and_then(|v| v.as_int()),
            Some(1)
        );
        assert_eq!(copy.death().ok().flatten(), first.death().ok().flatten());
        let (_, again) = replay_copy(&copy).expect("still a dead letter");
        assert_eq!(
            again.headers().get(REPLAYED).and_then(|v| v.as_int()),
            Some(2)
        );
    }

    #[test]
    fn a_message_without_a_death_record_has_no_replay_copy() {
        assert!(replay_copy(&Message::new("alive")).is_none());
    }
}
