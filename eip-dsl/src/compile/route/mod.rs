//! A compiled route: the channel it consumes, its steps (wire taps, filters, translators, ...),
//! and what it does with what comes out of them (send to targets, choose one, or a recipient
//! list).
//!
//! What a route does with a message is decided in one place, [`Route::decide`]: a pure function
//! from the message to the ordered [`Step`]s it results in (each tap's copy, each filter's
//! discard, each invalid message, each send, each dead letter), asking every
//! [route step](crate::step::RouteStep) in turn what it makes of what the one before made.
//! The running flow carries the steps out by sending ([`Route::handle`]); the dry run
//! (`eip route`) by recording where they would store the message. Both walk the same decision,
//! so they can not drift apart. How a running flow carries a message through is in
//! [`carry_out`].

mod carry_out;
mod outcome;
mod step_counts;
mod targets;

pub use step_counts::StepStats;
use targets::{dead_letters_of, recipients};

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use eip_core::channel::{Channel, DeadLetterChannel, RedeliveryPolicy};
use eip_core::endpoint::{PauseGate, PauseSwitch};
use eip_core::message::{HistoryKind, Message};
use eip_core::router::{
    ContentBasedRouter, LoadBalancer, Pick, RecipientList, RouterError, Target,
};

use super::rest::WeakRest;
use super::{CompileError, bus_channel, bus_target};
use crate::plan::{ActionPlan, OnErrorPlan, Plan, RecipientsPlan, RoutePlan};
use crate::step::{Building, Made, RouteStep, Side};
use eip_core::MessageBus;
use eip_core::store::durable::Durable;

pub use carry_out::RouteFailure;
pub use outcome::LastError;

/// A route, ready to consume its channel.
#[derive(Debug, Clone)]
pub struct Route {
    pub(super) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    name: String,
    from: Channel,
    steps: Vec<Box<dyn RouteStep>>,
    /// Each step in a few words, in the same order.
    described: Vec<String>,
    /// Each step's kind (`filter`), in the same order: for its `tracing` span.
    kinds: Vec<&'static str>,
    /// Whether a step calls out in a running flow (a program's service).
    calls_out: bool,
    action: Action,
    dead_letters: DeadLetterChannel,
    /// `on-error:` where a message whose step failed goes once `redelivery` is used up.
    on_error: Option<Channel>,
    /// The redelivery policy of the channel it consumes, which its consumer follows.
    redelivery: RedeliveryPolicy,
    /// Each step's own `on-error:` channel, in the steps' order: where a message the step
    /// fails on goes at once.
    step_errors: Vec<Option<Channel>>,
    /// How many messages its consumer hands it at once.
    concurrency: usize,
    /// Pauses and resumes its consumer (the Control Bus's detour).
    pause: PauseSwitch,
    counters: Counters,
    /// Each step's counters, in the steps' order.
    step_counts: Box<[step_counts::StepCounters]>,
    /// With Message History on (`history: true`), each step's name in the `history` header
    /// (`ROUTE/N KIND`, N from 1); `None` when the flow records none.
    history: Option<Vec<String>>,
    outcomes: outcome::Outcomes,
}

/// What a route does with a message that passed its filter. Each is an eip-core router, so
/// the route keeps its semantics: a copy per target with dead-lettering of closed ones, first
/// match wins with `no-route` dead letters, header lists resolved on the bus.
#[derive(Debug)]
pub(super) enum Action {
    /// A fixed list of targets (one, usually).
    To(RecipientList),
    /// A content-based router.
    Choice(ContentBasedRouter),
    /// A recipient list (fixed or from a header).
    Recipients(RecipientList),
    /// A load balancer: each message to one of its targets.
    LoadBalance(LoadBalancer),
}

/// One thing a route does with a message, in the order [`Route::decide`] lists them. Each
/// carries the message it concerns: the steps may have changed it, or split it into several.
#[derive(Debug)]
pub(super) enum Step<'r> {
    /// What step `index` (from 0) made: the messages it passed on. Listed only when asked for
    /// (the dry run's `--steps`), after that step's other effects.
    Made {
        /// Which step.
        index: usize,
        /// What went on from it, in order.
        out: Vec<Message>,
        /// What it said it did, where passing messages on or not does not say it all.
        notes: Vec<String>,
    },
    /// What a route step does besides passing messages on: a tap's copy, a filter's
    /// discard, an invalid message.
    Side(Side),
    /// A copy sent to a channel or exchange.
    Send {
        /// Where.
        target: Cow<'r, Target>,
        /// What a closed (deleted) target means.
        if_closed: IfClosed,
        /// What.
        msg: Message,
    },
    /// The message dead-lettered with reason `no-route`, `origin` as the death record's
    /// channel, `error` as its error.
    NoRoute {
        /// The name the message could not be routed from or to.
        origin: String,
        /// Why.
        error: String,
        /// The message.
        msg: Message,
    },
}

/// What a send to a closed target does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IfClosed {
    /// The copy is dead-lettered (reason `channel-deleted`): a recipient list's copies.
    DeadLetter,
    /// The route fails and the message is handed back for redelivery: a router's one send.
    Fail,
}

#[derive(Debug, Default)]
struct Counters {
    taken: AtomicU64,
    passed: AtomicU64,
    filtered: AtomicU64,
    tapped: AtomicU64,
    tap_dropped: AtomicU64,
    invalid: AtomicU64,
    duplicates: AtomicU64,
    dead_lettered: AtomicU64,
    diverted: AtomicU64,
}

/// A route's counters since the flow started (the admin API's `counters` of a route).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RouteStats {
    /// Messages taken from the route's channel.
    pub taken: u64,
    /// Messages taken of which something went through every step and was sent on.
    pub passed: u64,
    /// Messages (or parts) a filter held back (dropped or discarded).
    pub filtered: u64,
    /// Copies the wire taps took.
    pub tapped: u64,
    /// Copies a wire tap with `when-full: drop` had no room for, or whose channel was
    /// deleted.
    pub tap_dropped: u64,
    /// Messages (or parts) a step could not process, dead-lettered with reason `invalid`.
    pub invalid: u64,
    /// Messages an idempotent receiver found seen within its window (dropped or diverted).
    pub duplicates: u64,
    /// Messages (or copies) dead-lettered because they had nowhere to go: no clause matched
    /// and no `otherwise`, a recipient that does not exist, a target that was deleted.
    #[serde(rename = "dead_letters")]
    pub dead_lettered: u64,
    /// Messages whose step failed sent to an `on-error` channel: the route's, once the
    /// redelivery policy was used up, or the failing step's own, at once.
    pub diverted: u64,
    /// Messages the route carried out to the end (diverted ones included).
    pub handled: u64,
    /// Calls that failed: the message was handed back to its consumer, which redelivers or
    /// dead-letters it (each failed delivery counts).
    pub failed: u64,
}

impl Route {
    /// The route `plan` of `flow` over `bus`'s channels.
    pub(super) fn compile(
        plan: &RoutePlan,
        flow: &Plan,
        bus: &MessageBus,
        store: Option<&Arc<Durable>>,
    ) -> Result<Route, CompileError> {
        let from = bus_channel(bus, &plan.from)?;
        // Steps keep their state where the messages they come from live.
        let store = store.filter(|_| from.is_durable());
        let dead_letters = dead_letters_of(&from, bus);
        let failed = |source| CompileError::Route {
            route: plan.name.clone(),
            source,
        };
        // Named after the channel it consumes: a dead letter replayed there is routed again.
        let origin = plan.from.as_str();
        let action = match &plan.action {
            ActionPlan::To(targets) => {
                Action::To(recipients(&plan.name, origin, targets, bus, &dead_letters)?)
            }
            ActionPlan::Choice { when, otherwise } => {
                let mut router = ContentBasedRouter::builder(origin);
                for (predicate, target) in when {
                    router = router.when(predicate.clone(), bus_target(bus, target)?);
                }
                if let Some(target) = otherwise {
                    router = router.otherwise(bus_target(bus, target)?);
                }
                Action::Choice(
                    router
                        .dead_letter_channel(dead_letters.clone())
                        .build()
                        .map_err(failed)?,
                )
            }
            ActionPlan::RecipientList(RecipientsPlan::Fixed(targets)) => {
                Action::Recipients(recipients(&plan.name, origin, targets, bus, &dead_letters)?)
            }
            ActionPlan::RecipientList(RecipientsPlan::Header(header)) => Action::Recipients(
                RecipientList::from_header(origin, header, bus)
                    .dead_letter_channel(dead_letters.clone()),
            ),
            ActionPlan::LoadBalance { targets, strategy } => {
                let targets = targets
                    .iter()
                    .map(|t| bus_target(bus, t))
                    .collect::<Result<Vec<_>, _>>()?;
                Action::LoadBalance(LoadBalancer::new(origin, targets, *strategy).map_err(|e| {
                    failed(RouterError::NoRecipients {
                        name: e.name.clone(),
                    })
                })?)
            }
        };
        let steps = plan
            .steps
            .iter()
            .enumerate()
            .map(|(index, step)| {
                step.config.build_at(&Building {
                    bus,
                    route: &plan.name,
                    from: &from,
                    index,
                    store,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let calls_out = steps.iter().any(|s| s.calls_out() || s.wraps());
        // The policy its consumer follows: the one of the channel it consumes.
        let redelivery = flow
            .channel(&plan.from)
            .and_then(|c| c.redelivery.clone())
            .unwrap_or_default();
        let channel_of = |on_error: &Option<OnErrorPlan>| match on_error {
            Some(on_error) => bus_channel(bus, &on_error.to).map(Some),
            None => Ok(None),
        };
        let on_error = channel_of(&plan.on_error)?;
        let step_errors = plan
            .steps
            .iter()
            .map(|step| channel_of(&step.on_error))
            .collect::<Result<Vec<_>, _>>()?;
        let route = Route {
            inner: Arc::new(Inner {
                name: plan.name.clone(),
                from,
                steps,
                described: plan.steps.iter().map(|s| s.config.describe()).collect(),
                kinds: plan.steps.iter().map(|s| s.kind).collect(),
                calls_out,
                action,
                dead_letters,
                on_error,
                redelivery,
                step_errors,
                concurrency: plan.concurrency.max(1),
                pause: PauseSwitch::new(),
                counters: Counters::default(),
                step_counts: plan.steps.iter().map(|_| Default::default()).collect(),
                history: flow.history.then(|| {
                    let name = &plan.name;
                    (plan.steps.iter().enumerate())
                        .map(|(i, step)| format!("{name}/{} {}", i + 1, step.kind))
                        .collect()
                }),
                outcomes: outcome::Outcomes::default(),
            }),
        };
        for (index, step) in route.inner.steps.iter().enumerate() {
            step.attach(WeakRest {
                route: Arc::downgrade(&route.inner),
                first: index + 1,
            });
        }
        Ok(route)
    }

    /// The route's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The channel it consumes.
    pub fn from(&self) -> &Channel {
        &self.inner.from
    }

    /// What its consumer watches to pause ([`pause`](Self::pause)).
    pub fn pause_gate(&self) -> PauseGate {
        self.inner.pause.gate()
    }

    /// Pauses the route: its consumer takes nothing new (what it is processing finishes), and
    /// its channel's messages wait, in order. Whether it was running.
    pub fn pause(&self) -> bool {
        self.inner.pause.pause()
    }

    /// Resumes a paused route; whether it was paused.
    pub fn resume(&self) -> bool {
        self.inner.pause.resume()
    }

    /// Its pause switch (clones share it).
    pub fn pause_switch(&self) -> PauseSwitch {
        self.inner.pause.clone()
    }

    /// Each step's kind (`filter`, `transform`, ...), in the steps' order.
    pub fn step_kinds(&self) -> &[&'static str] {
        &self.inner.kinds
    }

    /// What each step did so far, in the steps' order.
    pub fn step_stats(&self) -> Vec<StepStats> {
        self.inner.step_counts.iter().map(|c| c.stats()).collect()
    }

    /// Whether the route is paused.
    pub fn is_paused(&self) -> bool {
        self.inner.pause.is_paused()
    }

    /// How many of its messages are processed at once (`concurrency:`, at least 1).
    pub fn concurrency(&self) -> usize {
        self.inner.concurrency
    }

    /// What the route does with `msg`, in order: what each of its steps makes of it (taps'
    /// copies, filters' discards, invalid messages), then for each message that comes out of
    /// the last step the action's sends and dead letters. Pure: sends nothing, counts nothing.
    /// With `report`, what each step passed on is listed too ([`Step::Made`]).
    pub(super) fn decide(&self, msg: Message, report: bool) -> Vec<Step<'_>> {
        let mut steps = Vec::with_capacity(2);
        let mut current = vec![self.entered(0, msg)];
        for (index, step) in self.inner.steps.iter().enumerate() {
            let mut next = Vec::with_capacity(current.len());
            let mut notes = Vec::new();
            let _span = self.step_span(index).entered();
            for msg in current {
                let mut made = step.decide(msg);
                notes.extend(made.note.take());
                self.take(index, made, &mut steps, &mut next);
            }
            if report {
                steps.push(Step::Made {
                    index,
                    out: next.clone(),
                    notes,
                });
            }
            current = next;
        }
        for msg in current {
            self.act(msg, &mut steps);
        }
        steps
    }

    /// The action's sends and dead letters for `msg`, which came out of the last step.
    /// A recipient list dead-letters the names it can not resolve before it sends.
    fn act<'r>(&'r self, msg: Message, steps: &mut Vec<Step<'r>>) {
        match self.action() {
            Action::To(list) | Action::Recipients(list) => {
                let resolution = list.resolve(&msg);
                if let Some(error) = resolution.no_recipients {
                    steps.push(Step::NoRoute {
                        origin: list.name().to_owned(),
                        error,
                        msg,
                    });
                    return;
                }
                for (origin, error) in resolution.unknown {
                    steps.push(Step::NoRoute {
                        origin,
                        error,
                        msg: msg.clone(),
                    });
                }
                for (_, error) in resolution.invalid {
                    let msg = msg.clone();
                    steps.push(Step::Side(Side::Invalid { msg, error }));
                }
                let last = resolution.targets.len().saturating_sub(1);
                let mut msg = Some(msg);
                for (n, target) in resolution.targets.into_iter().enumerate() {
                    // The last send takes the message itself: one clone fewer.
                    let copy = if n == last { msg.take() } else { msg.clone() };
                    let Some(copy) = copy else { break };
                    steps.push(Step::Send {
                        target: Cow::Owned(target),
                        if_closed: IfClosed::DeadLetter,
                        msg: copy,
                    });
                }
            }
            Action::Choice(router) => match router.select(&msg).target() {
                Some(target) => steps.push(Step::Send {
                    target: Cow::Borrowed(target),
                    if_closed: IfClosed::Fail,
                    msg,
                }),
                None => steps.push(Step::NoRoute {
                    origin: router.name().to_owned(),
                    error: format!(
                        "no `when` clause of router `{}` matched and it has no `otherwise`",
                        router.name()
                    ),
                    msg,
                }),
            },
            // A target closed by the time of the send fails the route: the redelivery picks
            // another. With all closed, the send to the last one dead-letters the message
            // (`channel-deleted`).
            Action::LoadBalance(balancer) => match balancer.select() {
                Pick::Target { target, .. } => steps.push(Step::Send {
                    target: Cow::Borrowed(target),
                    if_closed: IfClosed::Fail,
                    msg,
                }),
                Pick::AllClosed => {
                    if let Some(last) = balancer.targets().last() {
                        steps.push(Step::Send {
                            target: Cow::Borrowed(last),
                            if_closed: IfClosed::DeadLetter,
                            msg,
                        });
                    }
                }
            },
        }
    }

    /// Step `index` in a few words (`filter $.total > 0`), for the dry run's report.
    pub(super) fn step_described(&self, index: usize) -> &str {
        self.inner.described.get(index).map_or("", String::as_str)
    }

    pub(super) fn action(&self) -> &Action {
        &self.inner.action
    }

    /// Where its routers dead-letter: the dead letter channel of the channel it consumes.
    pub(super) fn dead_letters(&self) -> &DeadLetterChannel {
        &self.inner.dead_letters
    }

    /// The counters since the flow was compiled.
    pub fn stats(&self) -> RouteStats {
        let c = &self.inner.counters;
        RouteStats {
            taken: c.taken.load(Ordering::Relaxed),
            passed: c.passed.load(Ordering::Relaxed),
            filtered: c.filtered.load(Ordering::Relaxed),
            tapped: c.tapped.load(Ordering::Relaxed),
            tap_dropped: c.tap_dropped.load(Ordering::Relaxed),
            invalid: c.invalid.load(Ordering::Relaxed),
            duplicates: c.duplicates.load(Ordering::Relaxed),
            dead_lettered: c.dead_lettered.load(Ordering::Relaxed),
            diverted: c.diverted.load(Ordering::Relaxed),
            handled: self.inner.outcomes.handled(),
            failed: self.inner.outcomes.failed(),
        }
    }

    /// The last failure of a call, with its time; `None` while none failed.
    pub fn last_error(&self) -> Option<LastError> {
        self.inner.outcomes.last_error()
    }
}

impl Route {
    /// Has each step hand on or give up what it still holds, in order, as the flow stops
    /// ([`RouteStep::stop`]). Whether any did.
    pub(super) async fn stop_steps(&self) -> bool {
        let mut acted = false;
        for step in &self.inner.steps {
            acted |= step.stop().await;
        }
        acted
    }
}

/// What a step made goes on: its side effects to `steps`, its messages to `next`.
impl Route {
    /// What step `index` made: its side effects listed, what it passed on made the next
    /// step's input (each recording the step in its history, where the flow keeps one).
    fn take<'r>(
        &self,
        index: usize,
        made: Made,
        steps: &mut Vec<Step<'r>>,
        next: &mut Vec<Message>,
    ) {
        steps.extend(made.side.into_iter().map(Step::Side));
        match self
            .inner
            .history
            .as_ref()
            .and_then(|names| names.get(index))
        {
            Some(name) => next.extend(made.next.into_iter().map(|mut msg| {
                msg.record_history(name, HistoryKind::Step);
                msg
            })),
            None => next.extend(made.next),
        }
    }

    /// The `tracing` span of step `index` (debug level): `step{route=… step=2 kind=filter}`,
    /// inside the route's span in a running flow.
    pub(super) fn step_span(&self, index: usize) -> tracing::Span {
        let kind = self.inner.kinds.get(index).copied().unwrap_or("step");
        tracing::debug_span!("step", route = %self.inner.name, step = index + 1, kind = %kind)
    }

    /// `msg` on its way into step `first`: with Message History, the route's entry when it
    /// has just taken the message (`first` 0), else the entry of the step before, which wraps
    /// the rest of the route and has just handed it on.
    pub(super) fn entered(&self, first: usize, mut msg: Message) -> Message {
        if let Some(names) = &self.inner.history {
            match first.checked_sub(1) {
                None => msg.record_history(&self.inner.name, HistoryKind::Route),
                Some(wrapping) => {
                    if let Some(name) = names.get(wrapping) {
                        msg.record_history(name, HistoryKind::Step);
                    }
                }
            }
        }
        msg
    }
}
