//! The state an aggregator, its clones and its timer share, and the one place it changes.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use eip_core::message::{Message, MessageId};
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::config::{AggregatorConfig, Overflow, Rule};
use super::decision::{Decision, Refusal};
use super::group::{Added, Group, GroupRules, GroupStore, Part};
use super::stats::Counters;
use crate::Keeping;

/// What taking one message did to the groups.
pub(crate) enum Step {
    Held {
        count: usize,
        given_up: Option<Box<Group>>,
        /// The store making the addition last, when it has to.
        kept: Option<Keeping>,
    },
    Completed {
        group: Box<Group>,
        rule: Rule,
    },
    Duplicate {
        group: Arc<str>,
        number: u64,
    },
    Refused {
        open: usize,
        message: Box<Message>,
    },
    Invalid {
        reason: String,
        message: Box<Message>,
    },
}

pub(crate) struct Shared {
    pub(crate) config: AggregatorConfig,
    store: Mutex<Box<dyn GroupStore>>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) wake: Arc<Notify>,
    pub(crate) timer: OnceLock<AbortHandle>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.get() {
            timer.abort();
        }
    }
}

impl Shared {
    pub(crate) fn new(
        config: AggregatorConfig,
        store: Box<dyn GroupStore>,
        counters: Arc<Counters>,
    ) -> Self {
        Shared {
            config,
            store: Mutex::new(store),
            counters,
            wake: Arc::new(Notify::new()),
            timer: OnceLock::new(),
        }
    }

    fn store(&self) -> MutexGuard<'_, Box<dyn GroupStore>> {
        // A panic elsewhere while holding the lock leaves the groups as they were: go on.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `part` into its group: one change of the store per outcome.
    pub(crate) fn step(&self, key: &str, part: Part) -> Step {
        let config = &self.config;
        let mut store = self.store();
        if config.overflow == Overflow::Refuse
            && store.len() >= config.max_groups
            && store.group(key).is_none()
        {
            let open = store.len();
            return Step::Refused {
                open,
                message: Box::new(part.message),
            };
        }
        let rules = Admission {
            config,
            closed: part.number.is_some() && store.is_closed(key),
        };
        let added = match store.add(key, part, &Instant::now, &rules).map_err(|r| *r) {
            Ok(added) => added,
            Err((Refusal::Duplicate(number), _)) => {
                return Step::Duplicate {
                    group: Arc::from(key),
                    number,
                };
            }
            Err((Refusal::Invalid(reason), part)) => {
                return Step::Invalid {
                    reason,
                    message: Box::new(part.message),
                };
            }
        };
        let Added { count, rule } = added;
        if let Some(rule) = rule {
            return match store.remove(key, rule == Rule::AllParts) {
                Some(group) => Step::Completed {
                    group: Box::new(group),
                    rule,
                },
                None => Step::Held {
                    count,
                    given_up: None,
                    kept: None,
                },
            };
        }
        let kept = store
            .group(key)
            .and_then(|group| group.messages().last())
            .and_then(|held| store.keep_added(key, held));
        let given_up = if store.len() > config.max_groups {
            let oldest = store.oldest().map(|(k, _)| k.to_owned());
            oldest.and_then(|k| store.remove(&k, false)).map(Box::new)
        } else {
            None
        };
        drop(store);
        if count == 1 {
            self.wake.notify_one();
        }
        Step::Held {
            count,
            given_up,
            kept,
        }
    }

    /// Makes lasting that the group `key` of `messages` is gone (see
    /// [`GroupStore::keep_removed`]).
    pub(crate) fn keep_removed(&self, key: &str, messages: &[MessageId]) -> Option<Keeping> {
        self.store().keep_removed(key, messages)
    }

    /// Puts messages back into their groups as a store read them back after a restart, each
    /// with the time its group opened; nothing is kept again and no group completes (a
    /// message that completed its group was never kept as held). How many went back, and the
    /// reasons of those that could not.
    pub(crate) fn restore(&self, held: Vec<(Message, Instant)>) -> (usize, Vec<String>) {
        let mut store = self.store();
        let mut problems = Vec::new();
        let mut restored = 0;
        for (msg, opened) in held {
            let (key, part) = match self.config.read(&msg) {
                Ok((key, sequence)) => (key.as_str().to_owned(), sequence.part(msg)),
                Err(reason) => {
                    problems.push(reason);
                    continue;
                }
            };
            let rules = Admission {
                config: &self.config,
                closed: false,
            };
            match store.add(&key, part, &|| opened, &rules) {
                Ok(_) => restored += 1,
                Err(refused) => problems.push(format!("group `{key}`: {:?}", refused.0)),
            }
        }
        drop(store);
        self.wake.notify_one();
        (restored, problems)
    }

    /// What [`step`](Self::step) would do with `msg`, changing nothing.
    pub(crate) fn peek(&self, msg: &Message) -> Decision {
        let config = &self.config;
        let (key, part) = match config.read(msg) {
            Ok((key, sequence)) => (key.as_str().to_owned(), sequence.part(msg.clone())),
            Err(reason) => return Decision::Invalid { reason },
        };
        let store = self.store();
        let existing = store.group(&key);
        let closed = part.number.is_some() && store.is_closed(&key);
        match config.admit(existing, closed, &part) {
            Ok(()) => {}
            Err(Refusal::Duplicate(number)) => return Decision::Duplicate { group: key, number },
            Err(Refusal::Invalid(reason)) => return Decision::Invalid { reason },
        }
        let opens = existing.is_none();
        let full = opens && store.len() >= config.max_groups;
        if full && config.overflow == Overflow::Refuse {
            return Decision::Refused { open: store.len() };
        }
        let mut group = existing
            .cloned()
            .unwrap_or_else(|| Group::new(key.clone(), Instant::now(), 0));
        group.push(part);
        if let Some(rule) = config.completion(&group) {
            return Decision::Completes {
                group: key,
                count: group.len(),
                rule,
            };
        }
        let gives_up = if full {
            store.oldest().map(|(k, _)| k.to_owned())
        } else {
            None
        };
        Decision::Held {
            group: key,
            count: group.len(),
            expected: config.expected(&group),
            gives_up,
        }
    }

    /// The number of open groups.
    pub(crate) fn open_groups(&self) -> usize {
        self.store().len()
    }

    /// When the oldest open group opened.
    pub(crate) fn oldest_opened(&self) -> Option<Instant> {
        self.store().oldest().map(|(_, at)| at)
    }

    /// Takes out every open group, oldest first.
    pub(crate) fn take_all(&self) -> Vec<Group> {
        let mut store = self.store();
        let mut all = Vec::with_capacity(store.len());
        while let Some((key, _)) = store.oldest() {
            let key = key.to_owned();
            match store.remove(&key, false) {
                Some(group) => all.push(group),
                None => break,
            }
        }
        all
    }

    /// Takes out every group opened `timeout` or longer before `now`.
    pub(crate) fn take_expired(&self, now: Instant, timeout: Duration) -> Vec<Group> {
        let mut store = self.store();
        let mut expired = Vec::new();
        while let Some((key, opened)) = store.oldest() {
            if now.saturating_duration_since(opened) < timeout {
                break;
            }
            let key = key.to_owned();
            match store.remove(&key, false) {
                Some(group) => expired.push(group),
                None => break,
            }
        }
        expired
    }
}

/// The aggregator's rules as a store sees them while adding a part.
struct Admission<'a> {
    config: &'a AggregatorConfig,
    /// The part's key belongs to a split completed already.
    closed: bool,
}

impl GroupRules for Admission<'_> {
    fn admit(&self, group: Option<&Group>, part: &Part) -> Result<(), Refusal> {
        self.config.admit(group, self.closed, part)
    }

    fn completion(&self, group: &Group) -> Option<Rule> {
        self.config.completion(group)
    }

    fn expected_len(&self) -> usize {
        // A size rule says how big a group gets. At most 128 at once: room is taken for every
        // open group, most of which may never fill.
        self.config.size.map_or(0, |size| size.min(128))
    }
}
