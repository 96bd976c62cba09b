//! `aggregate`: the Aggregator. Correlated messages are held in groups; when a group is
//! complete its messages become one, which goes on through the rest of the route.
//!
//! ```yaml
//! steps:
//!   - aggregate: 10                                   # groups of 10, by correlation id
//!   - aggregate:
//!       key: '.sensor'                                # correlation, by jq (or `header:`)
//!       size: 100                                     # complete at 100 messages,
//!       timeout: 30s                                  # or 30 s after the group's first
//!       on-timeout: dead-letter                       # (default: release what it has)
//!       on-stop: release                              # open groups when the flow stops
//!       combine: '{sensor: .[0].sensor, mean: (map(.value) | add / length)}'
//!   - aggregate: {all-parts: true}                    # every part of a split
//!   - aggregate: {complete-when: 'any(.[]; .last)'}   # a jq test over the group
//! ```
//!
//! A group is the messages with one correlation key: a jq program's output, a header, or by
//! default the `correlation-id` header (which a split sets on its parts). It completes by the
//! first rule that holds: its `size`; `all-parts` (a part carried `sequence-size` N and every
//! `sequence-number` 1..=N is there); `complete-when`, a jq program over the array of the
//! group's payloads that gives `true`. `timeout` gives a group up that long after its first
//! message, without another message coming: `on-timeout: release` (the default) sends on what
//! it has, `dead-letter` sends its messages to the dead letter channel with reason
//! `incomplete`. The aggregate has a new id, the group's key as correlation id, the first
//! message's other headers, and as payload what `combine` (jq over the array of payloads)
//! makes of the group, by default that array.
//!
//! When the flow stops (its input ended, a signal, [`RunningFlow::stop`]), once nothing more
//! comes in, `on-stop` says what becomes of the groups still open: `release` sends each on
//! as it is, `dead-letter` sends its messages to the dead letter channel with reason
//! `incomplete`, `drop` forgets them (counted and logged as a warning), `keep` leaves them in
//! the flow's store for the next start. The default is `release` on a route kept in memory
//! (where a group left open would end with the process, its messages lost without a word)
//! and `keep` on a durable route (whose groups are on disk, and go on at the next start);
//! `keep` on a route kept in memory is refused. What is released or dead-lettered at stop
//! goes through the rest of the route, and the flow drains it before it stops its consumers.
//!
//! [`RunningFlow::stop`]: crate::compile::RunningFlow::stop
//!
//! A message whose key can not be computed is invalid (dead letter, reason `invalid`); a part
//! whose sequence number its group holds already is a duplicate, counted and dropped. At most
//! `max-groups` groups are open (10 000 by default): one more gives up the oldest.
//!
//! On a route whose channel is durable the groups live in the flow's store too: a held message
//! is written into its group in the commit that acknowledges it, and a group is deleted in the
//! commit that acknowledges the message that completed it, once its aggregate was accepted.
//! After a crash every message is either in an aggregate that was sent or still in its group
//! (read back at start, its timeout counting from when the group opened); an aggregate is sent
//! twice only if the crash came while it was being sent. A channel kept in a broker is refused:
//! its acknowledgements can not share a commit with the flow's store.

mod durable;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eip_core::MessageBus;
use eip_core::message::Message;
use eip_steps::aggregate::{
    AggregateError, Aggregated, Aggregator, AggregatorConfig, Decision, Incomplete, OnStop,
    Overflow, Stopped,
};
use futures::future::BoxFuture;
use tower::ServiceExt;

use super::expr::{Jq, jq_setting};
use super::key::{DefaultKey, KeyOf, key_of};
use super::later::Later;
use super::{Building, Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::{CompileError, Rest, RouteFailure, WeakRest, Wrapped};
use crate::diagnostic::Check;
use crate::settings::{Settings, spell_duration};

pub(super) static AGGREGATE: StepKind = StepKind {
    name: "aggregate",
    feature: None,
    main: "size",
    keys: &[
        "size",
        "key",
        "header",
        "timeout",
        "all-parts",
        "complete-when",
        "combine",
        "on-timeout",
        "max-groups",
        "on-stop",
    ],
    check,
};

/// How many groups are open at most unless the step says otherwise.
const DEFAULT_MAX_GROUPS: u64 = 10_000;

/// A checked `aggregate` step.
#[derive(Debug, Clone)]
pub struct AggregateConfig {
    key: KeyOf,
    /// Complete at this many messages.
    pub size: Option<usize>,
    /// Give a group up this long after its first message.
    pub timeout: Option<Duration>,
    /// Complete when every part of a split is there.
    pub all_parts: bool,
    complete_when: Option<Jq>,
    combine: Option<Jq>,
    /// Whether a group given up goes to the dead letters (else it is released).
    pub dead_letter_incomplete: bool,
    /// How many groups are open at most.
    pub max_groups: usize,
    /// What becomes of the groups still open when the flow stops, as written; unwritten,
    /// [`OnStop::Keep`] where the groups are in the flow's store and [`OnStop::Release`]
    /// where they are in memory.
    pub on_stop: Option<OnStop>,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let before = check.problems.len();
    let key = key_of(check, settings, DefaultKey::CorrelationId);
    let size = optional(settings, "size", |s| s.whole(check, "size", 1));
    let timeout = optional(settings, "timeout", |s| {
        s.positive_duration(check, "timeout")
    });
    let all_parts = optional(settings, "all-parts", |s| s.boolean(check, "all-parts"));
    let complete_when = optional(settings, "complete-when", |s| {
        jq_setting(check, s, "complete-when")
    });
    let combine = optional(settings, "combine", |s| jq_setting(check, s, "combine"));
    let on_timeout = optional(settings, "on-timeout", |s| {
        s.one_of(
            check,
            "on-timeout",
            &[("release", false), ("dead-letter", true)],
        )
    });
    let max_groups = optional(settings, "max-groups", |s| s.whole(check, "max-groups", 1));
    let on_stop = optional(settings, "on-stop", |s| on_stop(check, s, entry));
    if check.problems.len() > before {
        return None;
    }
    let config = AggregateConfig {
        key: key?,
        size: size.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        timeout,
        all_parts: all_parts.unwrap_or(false),
        complete_when,
        combine,
        dead_letter_incomplete: on_timeout.unwrap_or(false),
        max_groups: usize::try_from(max_groups.unwrap_or(DEFAULT_MAX_GROUPS)).unwrap_or(usize::MAX),
        on_stop,
    };
    if config.size.is_none()
        && config.timeout.is_none()
        && !config.all_parts
        && config.complete_when.is_none()
    {
        settings.report_entry(
            check,
            "no rule completes a group".to_owned(),
            Some(
                "set `size: N`, `timeout: DURATION`, `all-parts: true` or `complete-when: JQ` \
                 (any of them: the first that holds completes the group)",
            ),
        );
        return None;
    }
    if entry.from_broker {
        settings.report_entry(
            check,
            format!(
                "route `{}` consumes `{}`, kept in a broker: an aggregator keeps its groups in \
                 the flow's own store, and can not acknowledge a broker's message in the same \
                 commit",
                entry.route, entry.from
            ),
            Some(
                "aggregate on a channel of the flow (durable: true keeps its groups across \
                 restarts)",
            ),
        );
        return None;
    }
    Some(Box::new(config))
}

/// `on-stop:`; `keep` only where the groups outlive the process (a durable route).
fn on_stop(check: &mut Check<'_>, settings: &Settings<'_>, entry: &Entry<'_>) -> Option<OnStop> {
    let choice = settings.one_of(
        check,
        "on-stop",
        &[
            ("release", OnStop::Release),
            ("dead-letter", OnStop::DeadLetter),
            ("drop", OnStop::Drop),
            ("keep", OnStop::Keep),
        ],
    )?;
    if choice == OnStop::Keep && !entry.from_durable {
        settings.report_at(
            check,
            "on-stop",
            &format!(
                "`on-stop: keep` keeps the open groups for the next start, and route `{}` \
                 keeps them in memory (`{}` is not durable): they would be lost",
                entry.route, entry.from
            ),
            Some(
                "release them (`on-stop: release`, the default here), send them to the dead \
                 letters (`dead-letter`), or make the channel `durable: true`",
            ),
        );
        return None;
    }
    Some(choice)
}

/// `read(settings)` when `key` is set, else `None`.
fn optional<'s, T>(
    settings: &'s Settings<'_>,
    key: &str,
    read: impl FnOnce(&'s Settings<'_>) -> Option<T>,
) -> Option<T> {
    settings.get(key)?;
    read(settings)
}

impl StepConfig for AggregateConfig {
    fn describe(&self) -> String {
        let mut rules = Vec::new();
        if let Some(n) = self.size {
            rules.push(format!("{n} messages"));
        }
        if self.all_parts {
            rules.push("all parts".to_owned());
        }
        if let Some(jq) = &self.complete_when {
            rules.push(format!("when {}", jq.source()));
        }
        if let Some(t) = self.timeout {
            rules.push(format!("{} after the first", spell_duration(t)));
        }
        format!("aggregate {}: {}", self.key.describe(), rules.join(" or "))
    }

    fn build(&self, bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let dead_letters = bus.dead_letter_channel().clone();
        self.aggregator(dead_letters)
    }

    fn build_at(&self, at: &Building<'_>) -> Result<Box<dyn RouteStep>, CompileError> {
        let dead_letters = at
            .from
            .dead_letter_channel()
            .unwrap_or_else(|| at.bus.dead_letter_channel())
            .clone();
        let config = self.config(dead_letters, at.store.is_some())?;
        let rest = Later::default();
        let place = Place {
            route: at.route.to_owned(),
            step: at.index + 1,
        };
        let Some(store) = at.store else {
            return Ok(Box::new(Aggregate::new(
                Aggregator::new(rest.clone(), config),
                rest,
                place,
            )));
        };
        let table = format!("aggregate/{}/{}", at.route, at.index + 1);
        let (groups, held) = durable::DurableGroups::open(store, &table, at.from, at.route)?;
        let aggregator = Aggregator::with_store(rest.clone(), config, groups);
        let (restored, problems) = aggregator.restore(held);
        for problem in &problems {
            tracing::error!(route = at.route, %problem, "a held message could not go back into its group");
        }
        if restored > 0 {
            tracing::info!(
                route = at.route,
                restored,
                groups = aggregator.open_groups(),
                "aggregator: groups read back from the store"
            );
        }
        Ok(Box::new(Aggregate::new(aggregator, rest, place)))
    }
}

impl AggregateConfig {
    fn aggregator(
        &self,
        dead_letters: eip_core::channel::DeadLetterChannel,
    ) -> Result<Box<dyn RouteStep>, CompileError> {
        let config = self.config(dead_letters, false)?;
        let rest = Later::default();
        let place = Place {
            route: String::new(),
            step: 0,
        };
        Ok(Box::new(Aggregate::new(
            Aggregator::new(rest.clone(), config),
            rest,
            place,
        )))
    }

    /// The aggregator's configuration; `durable`: its groups are in the flow's store.
    fn config(
        &self,
        dead_letters: eip_core::channel::DeadLetterChannel,
        durable: bool,
    ) -> Result<AggregatorConfig, CompileError> {
        let on_stop = match (self.on_stop, durable) {
            (Some(on_stop), _) => on_stop,
            (None, true) => OnStop::Keep,
            (None, false) => OnStop::Release,
        };
        let mut builder = Aggregator::builder()
            .correlate_by(self.key.key())
            .max_groups(self.max_groups, Overflow::GiveUpOldest)
            .on_incomplete(match self.dead_letter_incomplete {
                true => Incomplete::DeadLetter,
                false => Incomplete::Release,
            })
            .on_stop(on_stop)
            .dead_letter_channel((*dead_letters).clone());
        if let Some(n) = self.size {
            builder = builder.complete_at_size(n);
        }
        if let Some(t) = self.timeout {
            builder = builder.complete_after(t);
        }
        if self.all_parts {
            builder = builder.complete_with_all_parts();
        }
        if let Some(jq) = self.complete_when.clone() {
            builder = builder.complete_when(move |messages| completes(&jq, messages));
        }
        if let Some(jq) = self.combine.clone() {
            builder = builder.combine_with(move |messages| combine(&jq, messages));
        }
        builder.build().map_err(|e| CompileError::Step {
            step: self.describe(),
            reason: e.to_string(),
        })
    }
}

/// The group's payloads as one message, a JSON array, with the first message's headers (so
/// `$headers` reads them); why not, when a payload is not JSON.
fn group_message(messages: &[Message]) -> Result<Message, String> {
    let values = messages
        .iter()
        .map(|m| m.json_value().cloned().map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let payload = serde_json::to_vec(&values).map_err(|e| e.to_string())?;
    let headers = messages
        .first()
        .map(|m| m.headers().clone())
        .unwrap_or_default();
    Ok(Message::from_parts(
        eip_core::message::MessageId::new(),
        headers,
        payload.into(),
    ))
}

/// Whether `jq` over the group gives `true`. Anything else, an error included, leaves the
/// group open (and is logged): the timeout, if set, still ends it.
fn completes(jq: &Jq, messages: &[Message]) -> bool {
    let outcome = group_message(messages).and_then(|m| jq.one(&m).map_err(|e| e.to_string()));
    match outcome {
        Ok(serde_json::Value::Bool(done)) => done,
        Ok(other) => {
            tracing::warn!(program = jq.source(), gave = %other, "complete-when did not give true or false: the group stays open");
            false
        }
        Err(error) => {
            tracing::warn!(program = jq.source(), %error, "complete-when failed: the group stays open");
            false
        }
    }
}

/// What `jq` makes of the group: the aggregate's payload.
fn combine(jq: &Jq, messages: &[Message]) -> Result<bytes::Bytes, String> {
    let group = group_message(messages)?;
    jq.one_payload(&group)
        .map_err(|e| format!("combine `{}`: {e}", jq.source()))
}

#[derive(Debug)]
struct Aggregate {
    aggregator: Aggregator<Later>,
    rest: Later,
    place: Place,
    /// How many kept groups the last stop logged, so a second stop says it again only when
    /// it changed.
    kept_logged: AtomicUsize,
}

/// Where the step is, for what it logs.
#[derive(Debug)]
struct Place {
    route: String,
    /// From 1.
    step: usize,
}

impl Aggregate {
    fn new(aggregator: Aggregator<Later>, rest: Later, place: Place) -> Self {
        Aggregate {
            aggregator,
            rest,
            place,
            kept_logged: AtomicUsize::new(0),
        }
    }

    /// Logs what a stop did, when it did anything.
    fn log_stop(&self, stopped: &Stopped) {
        if stopped.groups == 0 {
            return;
        }
        let route = self.place.route.as_str();
        let step = self.place.step;
        match stopped.action {
            OnStop::Keep => {
                if self.kept_logged.swap(stopped.groups, Ordering::Relaxed) != stopped.groups {
                    tracing::info!(
                        route,
                        step,
                        "aggregator stopped: {stopped} in the store for the next start"
                    );
                }
            }
            OnStop::Drop => {
                tracing::warn!(route, step, "aggregator stopped: {stopped}");
            }
            OnStop::Release | OnStop::DeadLetter => {
                tracing::info!(route, step, "aggregator stopped: {stopped}");
            }
        }
    }
}

impl RouteStep for Aggregate {
    fn decide(&self, msg: Message) -> Made {
        let decision = self.aggregator.peek(&msg);
        let note = decision.to_string();
        match decision {
            Decision::Invalid { reason } => Made::instead(Side::Invalid { msg, error: reason }),
            Decision::Duplicate { .. } => {
                Made::instead(Side::Duplicate { divert: None }).noted(note)
            }
            Decision::Held { .. } | Decision::Completes { .. } | Decision::Refused { .. } => {
                Made::default().noted(note)
            }
        }
    }

    fn wraps(&self) -> bool {
        true
    }

    fn attach(&self, rest: WeakRest) {
        self.rest.attach(rest);
    }

    fn around(&self, msg: Message, rest: Rest) -> BoxFuture<'_, Result<(), RouteFailure>> {
        let aggregator = self.aggregator.clone();
        Box::pin(async move {
            let wrapped = match aggregator.oneshot(msg).await {
                Ok(Aggregated::Duplicate { .. }) => Wrapped::Duplicate(None),
                Ok(_) => Wrapped::Done,
                Err(AggregateError::Invalid { reason, message }) => Wrapped::Invalid {
                    msg: *message,
                    error: reason,
                },
                Err(AggregateError::Unavailable(failure)) => Wrapped::Failed(failure),
                Err(other) => Wrapped::Error(other.to_string().into()),
            };
            rest.finish(wrapped).await
        })
    }

    fn stop(&self) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let stopped = self.aggregator.stop().await;
            self.log_stop(&stopped);
            stopped.acted()
        })
    }
}
