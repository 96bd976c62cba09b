//! The state an aggregator, its clones and its timer share, and the one place it changes.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use eip_core::message::Message;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::config::{AggregatorConfig, Overflow, Rule};
use super::decision::{Decision, Refusal};
use super::group::{Group, GroupStore, Part};
use super::stats::Counters;

/// What taking one message did to the groups.
pub(crate) enum Step {
    Held {
        group: String,
        count: usize,
        given_up: Option<Group>,
    },
    Completed {
        group: Group,
        rule: Rule,
    },
    Duplicate {
        group: String,
        number: u64,
    },
    Refused {
        open: usize,
        message: Message,
    },
    Invalid {
        reason: String,
        message: Message,
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
    pub(crate) fn step(&self, key: String, part: Part) -> Step {
        let config = &self.config;
        let mut store = self.store();
        let existing = store.group(&key);
        match config.admit(existing, store.is_closed(&key), &part) {
            Ok(()) => {}
            Err(Refusal::Duplicate(number)) => return Step::Duplicate { group: key, number },
            Err(Refusal::Invalid(reason)) => {
                return Step::Invalid {
                    reason,
                    message: part.message,
                };
            }
        }
        let opens = existing.is_none();
        if opens && store.len() >= config.max_groups && config.overflow == Overflow::Refuse {
            let open = store.len();
            return Step::Refused {
                open,
                message: part.message,
            };
        }
        store.add(&key, part, Instant::now());
        let Some(group) = store.group(&key) else {
            return Step::Held {
                group: key,
                count: 0,
                given_up: None,
            };
        };
        if let Some(rule) = config.completion(group) {
            return match store.remove(&key, rule == Rule::AllParts) {
                Some(group) => Step::Completed { group, rule },
                None => Step::Held {
                    group: key,
                    count: 0,
                    given_up: None,
                },
            };
        }
        let count = group.len();
        let given_up = if store.len() > config.max_groups {
            let oldest = store.oldest().map(|(k, _)| k.to_owned());
            oldest.and_then(|k| store.remove(&k, false))
        } else {
            None
        };
        drop(store);
        if opens {
            self.wake.notify_one();
        }
        Step::Held {
            group: key,
            count,
            given_up,
        }
    }

    /// What [`step`](Self::step) would do with `msg`, changing nothing.
    pub(crate) fn peek(&self, msg: &Message) -> Decision {
        let config = &self.config;
        let (key, part) = match config.part(msg.clone()) {
            Ok(kp) => kp,
            Err((_, reason)) => return Decision::Invalid { reason },
        };
        let store = self.store();
        let existing = store.group(&key);
        match config.admit(existing, store.is_closed(&key), &part) {
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
