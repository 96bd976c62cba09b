//! Where would this message go? A dry run through the compiled flow.
//!
//! [`Flow::dry_run`] follows a message the way the running flow would move it, using the same
//! compiled objects and the same decisions: the channel's datatype check and joins (through
//! eip-core's [`Tracer`](eip_core::join::Tracer), which walks the joins as a publish does: hop
//! budgets, filters, loop detection, archival joins), then for every route consuming each
//! channel it was stored on, the steps [`Route::decide`](super::Route) lists (wire tap, filter,
//! router decision, recipient list, dead letters), and exchanges' bindings and alternates. The
//! running flow carries out the same steps by sending. Nothing is stored, sent or counted.
//!
//! Two things of a real run have no counterpart: a target that is full makes a real send wait
//! (a dry run assumes room, also for a wire tap, which would drop its copy), and redelivery
//! after a failure (nothing fails in a dry run).

use std::collections::VecDeque;

use eip_core::channel::{Channel, marked_dead};
use eip_core::join::Tracer;
use eip_core::message::{DeathReason, Message};
use eip_core::router::Target;
use eip_core::topic::Route as ExchangeRoute;
use serde::Serialize;

use super::route::Step;
use super::{Flow, InputMessage, MessageView};
use crate::step::Side;

/// The most stores one dry run follows before it concludes the message would circulate
/// forever (routes that send it around a cycle of channels without loop detection).
pub const MAX_STORES: usize = 10_000;

/// Where one message would go.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Every channel that would store the message, sorted, once per stored copy: the entry
    /// channel, those joins and routes take it to, and the invalid message and dead letter
    /// channels it would reach.
    pub stored: Vec<String>,
    /// The first dead-lettering, if any.
    pub dead_letter: Option<ReportEntry>,
    /// The first diversion to an invalid message channel, if any.
    pub invalid: Option<ReportEntry>,
    /// The outbound adapters that would take a copy (sorted, once per copy): where the
    /// message would leave the flow. Left out of the JSON when there is none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub adapters: Vec<String>,
    /// What each route step made of the message, in the order they ran: only when asked for
    /// ([`Flow::dry_run_steps`], `eip route --steps`), and left out of the JSON otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepReport>,
    /// With Message History on (`history: true`), the way each stored copy came, sorted: the
    /// names in its `history` header when it was stored. Left out of the JSON otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<PathReport>,
}

/// The way one stored copy came.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct PathReport {
    /// Where it was stored.
    pub channel: String,
    /// The channels, routes and steps of its history, oldest first, ending with `channel`.
    pub path: Vec<String>,
}

/// What one route step passed on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReport {
    /// The route.
    pub route: String,
    /// The step's place in the route, from 1 (a `wire-tap:` or `filter:` shorthand counts).
    pub step: usize,
    /// The step in a few words (`filter $.total > 0`).
    pub does: String,
    /// What went on from it: none when it held the message back, several from a split.
    pub out: Vec<MessageView>,
    /// What it said it did, where `out` does not say it all (`held in group g, 3 of 10`);
    /// left out of the JSON when there is nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A channel and a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportEntry {
    /// The dead letter or invalid message channel.
    pub channel: String,
    /// Why: a dead letter reason (`no-route`, ...) or what did not fit the datatype.
    pub reason: String,
}

/// Why a dry run could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DryRunError {
    /// The input names no channel, exchange or inbound adapter of the flow.
    #[error("{0}")]
    UnknownTarget(String),
    /// The message would never stop moving.
    #[error(
        "the message would be stored more than {MAX_STORES} times: routes send it around a cycle \
         of channels ({0}) that loop detection does not guard (only channels in joins are)"
    )]
    Endless(String),
}

/// What the dry run has still to follow.
enum Task {
    /// Send to a channel or an exchange.
    Send(Target, Message),
    /// Stored on a channel: the routes consuming it take it.
    Consume(Channel, Message),
}

impl Flow {
    /// Where `input` would go if sent now. Nothing is sent. `input.to` may name an inbound
    /// adapter: the message then starts where that adapter hands it over, on its channel
    /// (what the adapter itself refuses, an HTTP body over the limit say, is not simulated).
    pub fn dry_run(&self, input: &InputMessage) -> Result<Report, DryRunError> {
        self.dry_run_with(input, false)
    }

    /// [`dry_run`](Self::dry_run), with what each route step made of the message in
    /// [`Report::steps`].
    pub fn dry_run_steps(&self, input: &InputMessage) -> Result<Report, DryRunError> {
        self.dry_run_with(input, true)
    }

    fn dry_run_with(&self, input: &InputMessage, steps: bool) -> Result<Report, DryRunError> {
        let entry = self
            .adapters
            .iter()
            .find(|a| a.is_inbound() && a.name == input.to)
            .map_or(input.to.as_str(), |a| a.channel.as_str());
        let target = self
            .bus
            .target(entry)
            .map_err(|e| DryRunError::UnknownTarget(e.to_string()))?;
        let mut run = Run {
            flow: self,
            tracer: Tracer::new(),
            work: VecDeque::from([Task::Send(target, input.message.clone())]),
            report: Report::default(),
            steps,
        };
        while let Some(step) = run.work.pop_front() {
            match step {
                Task::Send(target, msg) => run.send(target, msg)?,
                Task::Consume(channel, msg) => run.consume(&channel, &msg),
            }
        }
        run.report.stored.sort_unstable();
        run.report.adapters.sort_unstable();
        run.report.history.sort_unstable();
        Ok(run.report)
    }
}

struct Run<'f> {
    flow: &'f Flow,
    tracer: Tracer,
    work: VecDeque<Task>,
    report: Report,
    /// Whether to record what each step made.
    steps: bool,
}

impl Run<'_> {
    fn send(&mut self, target: Target, msg: Message) -> Result<(), DryRunError> {
        let channel = match target {
            Target::Channel(channel) => channel,
            Target::Exchange(exchange) => {
                match exchange.route_message(&msg) {
                    ExchangeRoute::Targets(channels) => {
                        for channel in channels {
                            self.work
                                .push_back(Task::Send(Target::Channel(channel), msg.clone()));
                        }
                    }
                    ExchangeRoute::Alternate(channel) => {
                        self.work
                            .push_back(Task::Send(Target::Channel(channel), msg));
                    }
                    ExchangeRoute::Dropped => {}
                }
                return Ok(());
            }
        };
        let traced = self.tracer.send(&channel, &msg);
        for (channel, msg) in traced.stored {
            self.store(channel, msg)?;
        }
        for refused in traced.invalid {
            self.report.invalid.get_or_insert_with(|| ReportEntry {
                channel: refused.invalid_channel.name().to_owned(),
                reason: refused.reason.clone(),
            });
            self.store(refused.invalid_channel, refused.message)?;
        }
        Ok(())
    }

    fn store(&mut self, channel: Channel, msg: Message) -> Result<(), DryRunError> {
        if self.report.stored.len() >= MAX_STORES {
            return Err(DryRunError::Endless(self.cycle()));
        }
        self.report.stored.push(channel.name().to_owned());
        if self.flow.history {
            // A history the flow wrote itself always reads back; a foreign one shows as none.
            let path = msg.history().unwrap_or_default();
            self.report.history.push(PathReport {
                channel: channel.name().to_owned(),
                path: path.into_iter().map(|entry| entry.name).collect(),
            });
        }
        self.work.push_back(Task::Consume(channel, msg));
        Ok(())
    }

    /// The channels stored at most often: the cycle an endless run goes around.
    fn cycle(&self) -> String {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for name in &self.report.stored {
            match counts.iter_mut().find(|(n, _)| n == name) {
                Some((_, count)) => *count += 1,
                None => counts.push((name, 1)),
            }
        }
        let most = counts.iter().map(|(_, c)| *c).max().unwrap_or(0);
        let names: Vec<&str> = counts
            .iter()
            .filter(|(_, c)| *c * 2 >= most)
            .map(|(n, _)| *n)
            .collect();
        names.join(", ")
    }

    /// Dead-letters `msg` on `origin`'s behalf, as the route would.
    fn dead_letter(
        &mut self,
        route: &super::Route,
        msg: &Message,
        origin: &str,
        reason: DeathReason,
        error: String,
    ) {
        let dead_letters = route.dead_letters();
        self.report.dead_letter.get_or_insert_with(|| ReportEntry {
            channel: dead_letters.name().to_owned(),
            reason: reason.to_string(),
        });
        let dead = marked_dead(msg.clone(), origin, reason, Some(error));
        // A dead letter is put on its channel directly: no datatype, no loop detection.
        if self.report.stored.len() < MAX_STORES {
            self.report.stored.push(dead_letters.name().to_owned());
            let channel = Channel::PointToPoint((**dead_letters).clone());
            self.work.push_back(Task::Consume(channel, dead));
        }
    }

    /// The routes consuming `channel` each take the message as stored there: each step a
    /// route decides is followed (a send) or recorded (a dead letter).
    fn consume(&mut self, channel: &Channel, msg: &Message) {
        let flow = self.flow;
        let outbound = flow
            .adapters
            .iter()
            .filter(|a| !a.is_inbound() && a.channel == channel.name());
        self.report
            .adapters
            .extend(outbound.map(|a| a.name.clone()));
        for route in flow.routes_from(channel.name()) {
            for step in route.decide(msg.clone(), self.steps) {
                let (target, msg) = match step {
                    Step::Made { index, out, notes } => {
                        self.made(route, index, &out, notes);
                        continue;
                    }
                    Step::Side(Side::Tap { channel, copy, .. }) => (Target::Channel(channel), copy),
                    Step::Side(Side::Filtered {
                        discard: Some(channel),
                        msg,
                    }) => (Target::Channel(channel), msg),
                    Step::Side(Side::Filtered { discard: None, .. }) => continue,
                    Step::Side(Side::Duplicate {
                        divert: Some((channel, msg)),
                    }) => (Target::Channel(channel), msg),
                    Step::Side(Side::Duplicate { divert: None }) => continue,
                    Step::Side(Side::Invalid { msg, error }) => {
                        let origin = route.from().name();
                        self.dead_letter(route, &msg, origin, DeathReason::Invalid, error);
                        continue;
                    }
                    Step::Send { target, msg, .. } => (target.into_owned(), msg),
                    Step::NoRoute { origin, error, msg } => {
                        self.dead_letter(route, &msg, &origin, DeathReason::NoRoute, error);
                        continue;
                    }
                };
                self.work.push_back(Task::Send(target, msg));
            }
        }
    }

    /// Records what step `index` of `route` passed on.
    fn made(&mut self, route: &super::Route, index: usize, out: &[Message], notes: Vec<String>) {
        self.report.steps.push(StepReport {
            route: route.name().to_owned(),
            step: index + 1,
            does: route.step_described(index).to_owned(),
            out: out.iter().map(MessageView::of).collect(),
            notes,
        });
    }
}
