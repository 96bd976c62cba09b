//! `resequence`: the Resequencer. Messages that arrive out of order go on through the rest of
//! the route in the order of their sequence numbers.
//!
//! ```yaml
//! steps:
//!   - resequence: {}                       # by the `sequence-number` header, from 1
//!   - resequence: '.seq'                   # by a jq program over the message
//!   - resequence:
//!       header: x-seq                      # by a header
//!       start: 100                         # the first number expected (default 1)
//!       gap-timeout: 5s                    # give a missing number up after 5 s
//!       max-held: 1000                     # hold at most 1 000 (default 10 000)
//! ```
//!
//! Each message's sequence number is a whole number from 1: a jq program's output (`key:`), a
//! header's value (`header:`), or by default the `sequence-number` header (which a split sets on
//! its parts). The step releases the number it expects next (`start` at first) as soon as it
//! arrives, followed by every consecutive number it held, and holds any higher number.
//!
//! - `gap-timeout`: a gap waited on that long (from when the step began holding messages behind
//!   it) is given up without another message: everything held goes on in order, skipping the
//!   missing numbers. Each gap given up is counted. Without it a gap waits until the bound.
//! - `max-held` (10 000 by default): holding one more gives the first gap up, and the run held
//!   after it goes on in order (counted as a gap, and as an overflow).
//! - A number released already, or held already, is a duplicate: dropped and counted. A number
//!   skipped by a gap given up that arrives after all is late: it goes on at once, out of
//!   order, rather than be lost (the last 1 024 gaps are remembered; an older one counts as a
//!   duplicate).
//! - A message whose number can not be read (no header, not a whole number from 1, a jq error)
//!   is invalid: to the dead letters, reason `invalid`.
//!
//! On a route whose channel is not durable the held messages are in memory only. On a durable
//! route they live in the flow's store too (a key table `resequence/ROUTE/STEP`): a held
//! message is written in the commit that acknowledges it, and a released run is deleted with
//! the next number to release once the rest of the route took it. After a crash every message
//! is either released or still held (read back at start with the next number, the gaps given
//! up, and the gap timer counting from when the gap began); a message is sent twice only if
//! the crash came while it was being released. A channel kept in a broker is refused: its
//! acknowledgements can not share a commit with the flow's store.

mod durable;

use std::sync::Mutex;
use std::time::Duration;

use eip_core::MessageBus;
use eip_core::message::{Message, names::SEQUENCE_NUMBER};
use eip_steps::aggregate::Key;
use eip_steps::resequence::{
    Decision, ResequenceError, Resequenced, Resequencer, ResequencerConfig, ResequencerLayer,
    ResequencerStats,
};
use futures::future::BoxFuture;
use tower::{Layer, ServiceExt};

use super::key::{DefaultKey, KeyOf, key_of};
use super::later::Later;
use super::{Building, Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::{CompileError, Rest, RouteFailure, WeakRest, Wrapped};
use crate::diagnostic::Check;
use crate::settings::{Settings, spell_duration};

pub(super) static RESEQUENCE: StepKind = StepKind {
    name: "resequence",
    feature: None,
    main: "key",
    keys: &["key", "header", "start", "gap-timeout", "max-held"],
    check,
};

/// How many messages are held at most unless the step says otherwise (eip-steps' default).
const DEFAULT_MAX_HELD: u64 = 10_000;

/// A checked `resequence` step.
#[derive(Debug, Clone)]
pub struct ResequenceConfig {
    key: KeyOf,
    /// The first number released.
    pub start: u64,
    /// Give a gap up after this long.
    pub gap_timeout: Option<Duration>,
    /// How many messages are held at most.
    pub max_held: usize,
    /// Builds the resequencers; every one it built shares its counters.
    layer: ResequencerLayer,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let before = check.problems.len();
    // The default is the step's own (the sequence number), read in `sequence_key`.
    let key = key_of(check, settings, DefaultKey::CorrelationId);
    let start = settings.whole(check, "start", 1);
    let gap_timeout = match settings.get("gap-timeout") {
        Some(_) => settings.positive_duration(check, "gap-timeout"),
        None => None,
    };
    let max_held = settings.whole(check, "max-held", 1);
    if check.problems.len() > before {
        return None;
    }
    if entry.from_broker {
        settings.report_entry(
            check,
            format!(
                "route `{}` consumes `{}`, kept in a broker: a resequencer keeps the messages \
                 it holds in the flow's own store, and can not acknowledge a broker's message \
                 in the same commit",
                entry.route, entry.from
            ),
            Some(
                "resequence on a channel of the flow (durable: true keeps what it holds across \
                 restarts)",
            ),
        );
        return None;
    }
    let key = key?;
    let start = start.unwrap_or(1);
    let max_held = usize::try_from(max_held.unwrap_or(DEFAULT_MAX_HELD)).unwrap_or(usize::MAX);
    let mut config = ResequencerConfig::new()
        .sequence_by(sequence_key(&key))
        .starting_at(start)
        .max_held(max_held);
    if let Some(t) = gap_timeout {
        config = config.gap_timeout(t);
    }
    Some(Box::new(ResequenceConfig {
        key,
        start,
        gap_timeout,
        max_held,
        layer: ResequencerLayer::new(config),
    }))
}

/// The sequence number as eip-steps reads it: the step's key, by default the
/// `sequence-number` header.
fn sequence_key(key: &KeyOf) -> Key {
    match key {
        KeyOf::Default(_) => Key::header(SEQUENCE_NUMBER),
        other => other.key(),
    }
}

impl ResequenceConfig {
    /// The counters of every resequencer this step built (one per compile of its flow): held,
    /// released, duplicates, late, `gaps` given up and the numbers they skipped, overflows.
    pub fn stats(&self) -> ResequencerStats {
        self.layer.stats()
    }
}

impl StepConfig for ResequenceConfig {
    fn describe(&self) -> String {
        let by = match &self.key {
            KeyOf::Default(_) => format!("by header {SEQUENCE_NUMBER}"),
            other => other.describe(),
        };
        let mut text = format!("resequence {by} from {}", self.start);
        if let Some(t) = self.gap_timeout {
            text.push_str(&format!(", gap timeout {}", spell_duration(t)));
        }
        text.push_str(&format!(", at most {} held", self.max_held));
        text
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let rest = Later::default();
        Ok(Box::new(Resequence {
            resequencer: self.layer.layer(rest.clone()),
            rest,
            resume: None,
        }))
    }

    fn build_at(&self, at: &Building<'_>) -> Result<Box<dyn RouteStep>, CompileError> {
        let Some(store) = at.store else {
            return self.build(at.bus);
        };
        let table = format!("resequence/{}/{}", at.route, at.index + 1);
        let (sequence, read) =
            durable::DurableSequence::open(store, &table, at.from, at.route, self.start)?;
        if read.unreadable > 0 {
            tracing::error!(
                route = at.route,
                table,
                unreadable = read.unreadable,
                "resequencer: entries of its table do not read back: passed over"
            );
        }
        if read.held > 0 || !read.unsent.is_empty() {
            tracing::info!(
                route = at.route,
                held = read.held,
                unsent = read.unsent.len(),
                next = read.next,
                "resequencer: held messages read back from the store"
            );
        }
        let rest = Later::default();
        Ok(Box::new(Resequence {
            resequencer: self.layer.layer_with_store(rest.clone(), sequence),
            rest,
            resume: Some(Mutex::new(read.unsent)),
        }))
    }
}

#[derive(Debug)]
struct Resequence {
    resequencer: Resequencer<Later>,
    rest: Later,
    /// On a durable route: what the store read back as released and not sent, to go out
    /// once the route is there.
    resume: Option<Mutex<Vec<(u64, Message)>>>,
}

impl RouteStep for Resequence {
    fn decide(&self, msg: Message) -> Made {
        let decision = self.resequencer.peek(&msg);
        let note = decision.to_string();
        match decision {
            Decision::Invalid { reason } => Made::instead(Side::Invalid { msg, error: reason }),
            Decision::Duplicate { .. } => {
                Made::instead(Side::Duplicate { divert: None }).noted(note)
            }
            Decision::Releases { .. } | Decision::Late { .. } => Made::next(msg).noted(note),
            Decision::Held { .. } | Decision::Overflows { .. } => Made::default().noted(note),
        }
    }

    fn wraps(&self) -> bool {
        true
    }

    /// On a route in memory, what is held goes out in order when the flow stops (the gaps
    /// given up, as at the gap timeout): stopping loses nothing. On a durable route it stays
    /// in the store for the next start.
    fn stop(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            if self.resume.is_some() {
                return false;
            }
            match self.resequencer.release_held().await {
                Ok(0) => false,
                Ok(released) => {
                    tracing::info!(released, "resequencer: held messages released at stop");
                    true
                }
                Err(error) => {
                    tracing::error!(%error, "resequencer: releasing held messages at stop failed");
                    false
                }
            }
        })
    }

    fn attach(&self, rest: WeakRest) {
        self.rest.attach(rest);
        if let Some(resume) = &self.resume {
            let unsent = std::mem::take(&mut *resume.lock().unwrap_or_else(|e| e.into_inner()));
            self.resequencer.resume(unsent);
        }
    }

    fn around(&self, msg: Message, rest: Rest) -> BoxFuture<'_, Result<(), RouteFailure>> {
        let resequencer = self.resequencer.clone();
        Box::pin(async move {
            let wrapped = match resequencer.oneshot(msg).await {
                Ok(Resequenced::Duplicate) => Wrapped::Duplicate(None),
                Ok(Resequenced::Held | Resequenced::Released { .. } | Resequenced::Late) => {
                    Wrapped::Done
                }
                // Logged: the store keeps them, and they go out at the next start.
                Ok(Resequenced::Kept { .. }) => Wrapped::Done,
                Err(ResequenceError::Keep(error)) => Wrapped::Error(error),
                Err(ResequenceError::Invalid { reason, message }) => Wrapped::Invalid {
                    msg: *message,
                    error: reason,
                },
                Err(ResequenceError::Unavailable(failure)) => Wrapped::Failed(failure),
                Err(ResequenceError::Inner { error, messages }) => {
                    // The resequencer moved past them: they are not held any more.
                    if !messages.is_empty() {
                        tracing::error!(
                            unsent = messages.len(),
                            %error,
                            "resequence: the rest of the route refused a released message; \
                             the ones released after it are not sent"
                        );
                    }
                    Wrapped::Failed(error)
                }
            };
            rest.finish(wrapped).await
        })
    }
}
