//! A compiled route: the channel it consumes, its wire tap and filter, and what it does with
//! a message that passes (send to targets, choose one, or a recipient list).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use eip_core::channel::{Channel, DeadLetterChannel};
use eip_core::message::Message;
use eip_core::predicate::Predicate;
use eip_core::router::{ContentBasedRouter, RecipientList, RouteError, Routed};

use super::{CompileError, bus_channel, bus_target};
use crate::plan::{ActionPlan, RecipientsPlan, RoutePlan};
use eip_core::MessageBus;

/// A route, ready to consume its channel.
#[derive(Debug, Clone)]
pub struct Route {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    from: Channel,
    tap: Option<Channel>,
    filter: Option<Filter>,
    action: Action,
    dead_letters: DeadLetterChannel,
    counters: Counters,
}

#[derive(Debug)]
struct Filter {
    predicate: Predicate,
    discard: Option<Channel>,
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
}

#[derive(Debug, Default)]
struct Counters {
    taken: AtomicU64,
    passed: AtomicU64,
    filtered: AtomicU64,
    tapped: AtomicU64,
    tap_dropped: AtomicU64,
    dead_lettered: AtomicU64,
}

/// A route's counters since the flow started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteStats {
    /// Messages taken from the route's channel.
    pub taken: u64,
    /// Messages that passed the filter and were sent on.
    pub passed: u64,
    /// Messages the filter held back (dropped or discarded).
    pub filtered: u64,
    /// Copies the wire tap took.
    pub tapped: u64,
    /// Copies the wire tap had no room for.
    pub tap_dropped: u64,
    /// Messages (or copies) dead-lettered because they had nowhere to go: no clause matched
    /// and no `otherwise`, a recipient that does not exist, a target that was deleted.
    pub dead_lettered: u64,
}

impl Route {
    pub(super) fn compile(plan: &RoutePlan, bus: &MessageBus) -> Result<Route, CompileError> {
        let from = bus_channel(bus, &plan.from)?;
        let dead_letters = dead_letters_of(&from, bus);
        let failed = |source| CompileError::Route {
            route: plan.name.clone(),
            source,
        };
        // Named after the channel it consumes: a dead letter replayed there is routed again.
        let origin = plan.from.as_str();
        let action = match &plan.action {
            ActionPlan::To(targets) => {
                let targets = targets
                    .iter()
                    .map(|t| bus_target(bus, t))
                    .collect::<Result<Vec<_>, _>>()?;
                Action::To(
                    RecipientList::new(origin, targets)
                        .map_err(failed)?
                        .dead_letter_channel(dead_letters.clone()),
                )
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
                let targets = targets
                    .iter()
                    .map(|t| bus_target(bus, t))
                    .collect::<Result<Vec<_>, _>>()?;
                Action::Recipients(
                    RecipientList::new(origin, targets)
                        .map_err(failed)?
                        .dead_letter_channel(dead_letters.clone()),
                )
            }
            ActionPlan::RecipientList(RecipientsPlan::Header(header)) => Action::Recipients(
                RecipientList::from_header(origin, header, bus)
                    .dead_letter_channel(dead_letters.clone()),
            ),
        };
        let filter = match &plan.filter {
            Some(predicate) => Some(Filter {
                predicate: predicate.clone(),
                discard: plan
                    .discard
                    .as_deref()
                    .map(|name| bus_channel(bus, name))
                    .transpose()?,
            }),
            None => None,
        };
        let tap = plan
            .wire_tap
            .as_deref()
            .map(|name| bus_channel(bus, name))
            .transpose()?;
        Ok(Route {
            inner: Arc::new(Inner {
                name: plan.name.clone(),
                from,
                tap,
                filter,
                action,
                dead_letters,
                counters: Counters::default(),
            }),
        })
    }

    /// The route's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The channel it consumes.
    pub fn from(&self) -> &Channel {
        &self.inner.from
    }

    pub(super) fn tap(&self) -> Option<&Channel> {
        self.inner.tap.as_ref()
    }

    /// Whether `msg` passes the filter; if not, where it is discarded to (if anywhere).
    pub(super) fn passes(&self, msg: &Message) -> Result<(), Option<&Channel>> {
        match &self.inner.filter {
            Some(filter) if !filter.predicate.matches(msg) => Err(filter.discard.as_ref()),
            _ => Ok(()),
        }
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
            dead_lettered: c.dead_lettered.load(Ordering::Relaxed),
        }
    }

    /// Processes one message taken from the route's channel: the tap's copy (offered without
    /// waiting), the filter, then the action. Completes when every target has accepted what
    /// it was sent; an error hands the message back for the consumer's redelivery policy.
    pub async fn handle(&self, msg: Message) -> Result<(), RouteError> {
        let c = &self.inner.counters;
        c.taken.fetch_add(1, Ordering::Relaxed);
        if let Some(tap) = self.tap() {
            let counter = match tap.offer(msg.clone()) {
                true => &c.tapped,
                false => &c.tap_dropped,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        if let Err(discard) = self.passes(&msg) {
            if let Some(channel) = discard {
                channel.send(msg).await?;
            }
            c.filtered.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let dead_lettered = match self.action() {
            Action::To(list) | Action::Recipients(list) => {
                list.distribute(msg).await?.dead_lettered
            }
            Action::Choice(router) => match router.route(msg).await? {
                Routed::DeadLettered => 1,
                Routed::When { .. } | Routed::Otherwise { .. } => 0,
            },
        };
        c.dead_lettered
            .fetch_add(dead_lettered as u64, Ordering::Relaxed);
        c.passed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A route as a `tower::Service`, for a consumer to drive.
impl tower::Service<Message> for Route {
    type Response = ();
    type Error = RouteError;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<(), RouteError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RouteError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let route = self.clone();
        Box::pin(async move { route.handle(msg).await })
    }
}

/// The dead letter channel messages from `channel` go to: its own, else the bus's.
fn dead_letters_of(channel: &Channel, bus: &MessageBus) -> DeadLetterChannel {
    channel
        .dead_letter_channel()
        .unwrap_or_else(|| bus.dead_letter_channel())
        .clone()
}
