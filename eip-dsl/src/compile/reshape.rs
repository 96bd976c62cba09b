//! Reshaping a running flow: the channels, routes, adapters and bridges a reload adds,
//! removes or replaces, with nothing accepted lost or taken twice.
//!
//! A reshape goes in two steps. [`RunningFlow::prepare`] does everything that can fail, and
//! nothing the flow would notice: the new channels are built and registered (and, kept in a
//! broker, connected), the new routes compiled (a changed route is compiled once on trial),
//! the new adapters and bridges connected (an HTTP server bound). A changed inbound adapter is
//! stopped first, so its successor can bind the same port. If anything fails, what was
//! prepared is let go, the stopped adapters are started again, and the flow runs as it did:
//! [`RunningFlow::abandon`] does the same for a reshape its caller gives up on.
//!
//! [`RunningFlow::commit`] then puts the new shape in place, in this order:
//!
//! 1. removed inbound adapters stop taking (an HTTP request in progress is answered);
//! 2. removed and changed routes stop: each finishes the messages it is processing, then its
//!    steps hand on what they hold (an aggregator's `on-stop:`); a changed route's successor
//!    starts where it stopped: on a point-to-point channel the messages waiting there, on a
//!    publish-subscribe channel the very subscription it had. A removed route's subscription
//!    to a publish-subscribe channel that stays ends: the copies it had not taken go to the
//!    dead letter channel with reason `channel-deleted`;
//! 3. added routes start; removed and changed outbound adapters stop the same way, their
//!    successors start;
//! 4. every channel that nothing consumes any more becomes an output of the flow, and one
//!    that a route now consumes stops being one;
//! 5. a removed channel empties into where it goes: its routes, outputs and outbound
//!    adapters go on consuming it until it is empty (nothing sends to it any more: the
//!    routes and adapters that did were removed or replaced), within the time given; then
//!    they stop and the channel is deleted. What still waits there then goes to the dead
//!    letter channel with reason `channel-deleted`, counted in what the reshape says;
//! 6. added adapters and bridges start, and the flow's views see the new parts.
//!
//! What commit says is one line per change (`channel audit added`, `route billing
//! replaced`). It does not fail: a changed route whose trial compile passed and whose real one
//! does not (a step's kept state that can not be read) is said so and left stopped.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use eip_core::channel::{Channel, PointToPoint};
use tokio::time::Instant;

use super::adapters::{AdapterError, Connected};
use super::channels::ChannelsBuilder;
use super::run::{OUTPUT, Part, RunningFlow};
use super::view::channel_stores;
use super::{CompileError, Flow, Route, invalid_channels};
use crate::kind::Endpoint;
use crate::plan::adapter::AdapterPlan;
use crate::plan::{DEAD_LETTERS, Plan};

/// What a reload changes in a running flow's parts, by name. Channels change by being added
/// or removed only; routes, adapters and bridges may be replaced too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reshape {
    /// Channels declared now, not before.
    pub channels_added: Vec<String>,
    /// Channels declared before, not now.
    pub channels_removed: Vec<String>,
    /// Routes new by name.
    pub routes_added: Vec<String>,
    /// Routes gone by name.
    pub routes_removed: Vec<String>,
    /// Routes of the same name declared differently.
    pub routes_changed: Vec<String>,
    /// Adapters and bridges new by name.
    pub adapters_added: Vec<String>,
    /// Adapters and bridges gone by name.
    pub adapters_removed: Vec<String>,
    /// Adapters and bridges of the same name declared differently.
    pub adapters_changed: Vec<String>,
}

impl Reshape {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self == &Reshape::default()
    }
}

/// Why a reshape was not made; the flow runs as it did.
#[derive(Debug, thiserror::Error)]
pub enum ReshapeError {
    /// A new channel or route could not be built.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A new adapter or bridge could not connect (a port in use, a broker not answering).
    #[error(transparent)]
    Adapter(#[from] AdapterError),
    /// A new channel kept in a broker did not connect in time.
    #[error("not connected within {limit:?}: {waiting}")]
    NotReady {
        /// What was waited for.
        waiting: String,
        /// How long.
        limit: Duration,
    },
    /// A new durable channel in a flow whose durable store is not open.
    #[error(
        "channel `{0}` is durable, and the flow was started without durable channels (its \
         store is opened at start): the first durable channel needs a restart"
    )]
    NoStore(String),
}

/// A reshape made ready by [`RunningFlow::prepare`], to [commit](RunningFlow::commit) or
/// [abandon](RunningFlow::abandon).
pub struct Reshaped {
    next: Flow,
    change: Reshape,
    /// The added routes, compiled.
    added_routes: Vec<Route>,
    /// The added and changed adapters, connected, not started.
    connected: Vec<Connected>,
    /// The changed inbound adapters stopped to make room for their successors.
    stopped: Vec<AdapterPlan>,
}

impl std::fmt::Debug for Reshaped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reshaped")
            .field("change", &self.change)
            .finish()
    }
}

impl RunningFlow {
    /// Makes ready the reshape `change` into the checked `plan` (see the module's rules),
    /// waiting at most `limit` for new channels kept in brokers. On error nothing is changed.
    pub async fn prepare(
        &mut self,
        plan: &Plan,
        change: &Reshape,
        limit: Duration,
    ) -> Result<Reshaped, ReshapeError> {
        let mut next = self.flow.clone();
        next.plan = Arc::new(plan.clone());
        next.adapters = plan.adapters.clone();
        next.invalid = invalid_channels(plan);
        next.stores = channel_stores(plan, next.durable.is_some(), next.brokers);
        let added = self.add_channels(&next, plan, change).await?;
        if let Err(late) = eip_core::channel::all_ready(&added, limit).await {
            self.remove_added(&added).await;
            return Err(ReshapeError::NotReady {
                waiting: late.waiting.join("; "),
                limit,
            });
        }
        let by_name: HashMap<&str, &Channel> = (self.flow.channels.iter().chain(&added))
            .map(|c| (c.name(), c))
            .collect();
        next.channels = (plan.channels.iter())
            .filter_map(|c| by_name.get(c.name.as_str()).map(|&c| c.clone()))
            .collect();
        if plan.channel(DEAD_LETTERS).is_none() {
            let dead_letters: &PointToPoint = next.bus.dead_letter_channel();
            next.channels.push(dead_letters.clone().into());
        }
        let compiled = self.compile_routes(&next, plan, change);
        let added_routes = match compiled {
            Ok(routes) => routes,
            Err(e) => {
                self.remove_added(&added).await;
                return Err(e.into());
            }
        };
        let mut reshaped = Reshaped {
            next,
            change: change.clone(),
            added_routes,
            connected: Vec::new(),
            stopped: Vec::new(),
        };
        if let Err(e) = self.connect_adapters(&mut reshaped).await {
            self.abandon_with(reshaped, &added).await;
            return Err(e);
        }
        Ok(reshaped)
    }

    /// Gives up a prepared reshape: what it connected is let go, the adapters it stopped
    /// start again, the channels it added are deleted (nothing was sent to them).
    pub async fn abandon(&mut self, reshaped: Reshaped) {
        let added: Vec<Channel> = (reshaped.change.channels_added.iter())
            .filter_map(|name| self.flow.bus.channel(name).ok())
            .collect();
        self.abandon_with(reshaped, &added).await;
    }

    async fn abandon_with(&mut self, reshaped: Reshaped, added: &[Channel]) {
        for connected in reshaped.connected {
            if let Endpoint::Inbound(inbound) = connected.endpoint {
                inbound.abandon().await;
            }
        }
        for plan in reshaped.stopped {
            match self.flow.connect(&plan).await {
                Ok(connected) => {
                    self.flow
                        .readiness
                        .connected(&plan.name, connected.endpoint());
                    self.start_adapter(connected);
                }
                Err(e) => tracing::error!(
                    adapter = %plan.name,
                    error = %eip_core::log::Escaped(&e),
                    "a stopped adapter could not start again"
                ),
            }
        }
        self.remove_added(added).await;
    }

    /// Builds and registers the added channels; on error, those registered are deleted.
    async fn add_channels(
        &self,
        next: &Flow,
        plan: &Plan,
        change: &Reshape,
    ) -> Result<Vec<Channel>, ReshapeError> {
        let mut builder = ChannelsBuilder {
            plan,
            bus: &next.bus,
            built: (self.flow.channels.iter())
                .map(|c| (c.name().to_owned(), c.clone()))
                .collect(),
            building: HashSet::new(),
            store: next.durable.as_ref(),
            brokers: next.brokers,
        };
        let mut added = Vec::new();
        for name in &change.channels_added {
            let durable = plan.channel(name).is_some_and(|c| c.durable);
            let outcome = if durable && next.brokers && next.durable.is_none() {
                Err(ReshapeError::NoStore(name.clone()))
            } else {
                builder
                    .channel(name)
                    .and_then(|c| Ok(next.bus.register(c.clone()).map(|()| c)?))
                    .map_err(ReshapeError::from)
            };
            match outcome {
                Ok(channel) => added.push(channel),
                Err(e) => {
                    self.remove_added(&added).await;
                    return Err(e);
                }
            }
        }
        Ok(added)
    }

    /// Deletes channels a reshape added before it was given up (empty: nothing sent to them).
    async fn remove_added(&self, added: &[Channel]) {
        for channel in added {
            let _ = self.flow.bus.remove(channel.name()).await;
        }
    }

    /// The added routes compiled; the changed ones compiled on trial (in memory, so that no
    /// kept state is opened twice) and let go.
    fn compile_routes(
        &self,
        next: &Flow,
        plan: &Plan,
        change: &Reshape,
    ) -> Result<Vec<Route>, CompileError> {
        for name in &change.routes_changed {
            if let Some(route) = plan.routes.iter().find(|r| &r.name == name) {
                Route::compile(route, plan, &next.bus, None)?;
            }
        }
        (change.routes_added.iter())
            .filter_map(|name| plan.routes.iter().find(|r| &r.name == name))
            .map(|route| Route::compile(route, plan, &next.bus, next.durable.as_ref()))
            .collect()
    }

    /// Connects the added and changed adapters; a changed inbound one is stopped first.
    async fn connect_adapters(&mut self, reshaped: &mut Reshaped) -> Result<(), ReshapeError> {
        let change = &reshaped.change;
        for name in change.adapters_added.iter().chain(&change.adapters_changed) {
            let Some(plan) = reshaped.next.adapters.iter().find(|a| &a.name == name) else {
                continue;
            };
            if change.adapters_changed.contains(name)
                && let Some(started) = self.take_inbound(name)
            {
                started.shutdown().await;
                if let Some(old) = self.flow.adapters.iter().find(|a| &a.name == name) {
                    reshaped.stopped.push(old.clone());
                }
            }
            let connected = reshaped.next.connect(plan).await.map_err(|source| {
                ReshapeError::Adapter(AdapterError {
                    noun: plan.noun(),
                    adapter: plan.name.clone(),
                    source,
                })
            })?;
            reshaped.connected.push(connected);
        }
        Ok(())
    }

    /// Puts the prepared reshape in place (see the module's rules), waiting at most `limit`
    /// for removed channels to empty and stopped consumers to finish; one line per change.
    pub async fn commit(&mut self, reshaped: Reshaped, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        let Reshaped {
            mut next,
            change,
            added_routes,
            connected,
            stopped: _,
        } = reshaped;
        let mut said = Vec::new();
        for name in &change.channels_added {
            said.push(format!("channel {name} added"));
        }
        let removed: HashSet<&str> = change.channels_removed.iter().map(String::as_str).collect();
        let old_adapters = self.flow.adapters.clone();
        // 1. Nothing new comes in through removed inbound adapters.
        for name in &change.adapters_removed {
            if let Some(started) = self.take_inbound(name) {
                started.shutdown().await;
                self.gone(name, "removed", &mut said);
            }
        }
        // 2. Removed and changed routes stop, unless they consume a removed channel.
        let old_routes: HashMap<String, Route> = (self.flow.routes.iter())
            .map(|r| (r.name().to_owned(), r.clone()))
            .collect();
        for name in change.routes_removed.iter().chain(&change.routes_changed) {
            let Some(route) = old_routes.get(name) else {
                continue;
            };
            if removed.contains(route.from().name()) {
                // It empties its channel first (5.); its successor subscribes anew.
                self.subscriptions.remove(name);
                continue;
            }
            self.stop_consumer(&Part::Route(name.clone()), deadline)
                .await;
            route.stop_steps().await;
            let successor = next.plan.routes.iter().find(|r| &r.name == name);
            let same_source = successor.is_some_and(|r| r.from == route.from().name());
            if !same_source {
                self.end_subscription(route, &mut said).await;
            }
            if change.routes_removed.contains(name) {
                said.push(format!("route {name} removed"));
            }
        }
        // 3. Their successors and the added routes start, in the order declared.
        let mut added_routes: HashMap<String, Route> = (added_routes.into_iter())
            .map(|r| (r.name().to_owned(), r))
            .collect();
        let mut routes = Vec::with_capacity(next.plan.routes.len());
        for plan in next.plan.clone().routes.iter() {
            let route = if let Some(route) = added_routes.remove(&plan.name) {
                self.start_route(&route);
                said.push(format!("route {} added", plan.name));
                route
            } else if change.routes_changed.contains(&plan.name) {
                match Route::compile(plan, &next.plan, &next.bus, next.durable.as_ref()) {
                    Ok(route) => {
                        self.start_route(&route);
                        said.push(format!("route {} replaced", plan.name));
                        route
                    }
                    Err(e) => {
                        said.push(format!(
                            "route {} stopped and not replaced: {}",
                            plan.name,
                            eip_core::log::Escaped(&e)
                        ));
                        continue;
                    }
                }
            } else if let Some(route) = old_routes.get(&plan.name) {
                route.clone()
            } else {
                continue;
            };
            routes.push(route);
        }
        next.routes = routes;
        // Removed and changed outbound adapters stop, unless they consume a removed channel.
        for name in change
            .adapters_removed
            .iter()
            .chain(&change.adapters_changed)
        {
            let Some(old) = old_adapters.iter().find(|a| &a.name == name) else {
                continue;
            };
            if old.is_inbound() || removed.contains(old.channel.as_str()) {
                continue;
            }
            self.stop_consumer(&Part::Adapter(name.clone()), deadline)
                .await;
            if change.adapters_removed.contains(name) {
                self.gone(name, "removed", &mut said);
            }
        }
        // 4. Outputs follow what consumes what.
        self.rearrange_outputs(&next, &removed, deadline).await;
        // 5. Removed channels empty into where they go, then are deleted.
        self.remove_channels(&change, &old_routes, deadline, &mut said)
            .await;
        // 6. Added and changed adapters start.
        for connected in connected {
            let name = connected.plan.name.clone();
            let noun = connected.plan.noun();
            next.readiness.connected(&name, connected.endpoint());
            self.start_adapter(connected);
            let what = if change.adapters_changed.contains(&name) {
                "replaced"
            } else {
                "added"
            };
            said.push(format!("{noun} {name} {what}"));
        }
        self.flow = next;
        self.flow.live.swap(self.flow.parts());
        said
    }

    /// Says that the adapter or bridge `name` went (`how`), and forgets it was connected.
    fn gone(&self, name: &str, how: &str, said: &mut Vec<String>) {
        let noun = (self.flow.adapters.iter())
            .find(|a| a.name == name)
            .map_or("adapter", |a| a.noun());
        self.flow.readiness.gone(name);
        said.push(format!("{noun} {name} {how}"));
    }

    /// Stops the consumer of `part`, if it runs: it finishes what it is processing, until
    /// `deadline` (then what it still processes goes back to its channel).
    async fn stop_consumer(&mut self, part: &Part, deadline: Instant) {
        if let Some(handle) = self.take_consumer(part) {
            let rest = deadline.saturating_duration_since(Instant::now());
            handle.shutdown_within(rest).await;
        }
    }

    /// Ends the subscription of `route`, gone from its publish-subscribe channel.
    async fn end_subscription(&mut self, route: &Route, said: &mut Vec<String>) {
        let Some(subscription) = self.subscriptions.remove(route.name()) else {
            return;
        };
        if let Channel::PublishSubscribe(channel) = route.from() {
            let ended = subscription.end(channel, route.name()).await;
            if ended > 0 {
                said.push(format!(
                    "route {}: {ended} copies of {} it had not taken dead-lettered \
                     (channel-deleted)",
                    route.name(),
                    channel.name()
                ));
            }
        }
    }

    /// Stops the outputs of channels something consumes now, starts those of channels
    /// nothing consumes any more (removed channels keep theirs until they are empty).
    async fn rearrange_outputs(&mut self, next: &Flow, removed: &HashSet<&str>, deadline: Instant) {
        let outputs: Vec<Channel> = next.unconsumed().cloned().collect();
        let running: Vec<String> = (self.consumers.iter())
            .filter_map(|(part, _)| match part {
                Part::Output(name) => Some(name.clone()),
                _ => None,
            })
            .collect();
        for name in &running {
            if removed.contains(name.as_str()) || outputs.iter().any(|c| c.name() == name) {
                continue;
            }
            self.stop_consumer(&Part::Output(name.clone()), deadline)
                .await;
            if let Ok(Channel::PublishSubscribe(channel)) = next.bus.channel(name)
                && channel.is_durable()
            {
                // Its copies would be kept for an output that is no more.
                let _ = channel.unsubscribe(OUTPUT).await;
            }
        }
        for channel in &outputs {
            if !running.iter().any(|name| name == channel.name()) {
                self.start_output(channel);
            }
        }
    }

    /// Lets the removed channels empty through their consumers until `deadline`, stops
    /// those, and deletes the channels.
    async fn remove_channels(
        &mut self,
        change: &Reshape,
        old_routes: &HashMap<String, Route>,
        deadline: Instant,
        said: &mut Vec<String>,
    ) {
        if change.channels_removed.is_empty() {
            return;
        }
        let channels: Vec<Channel> = (change.channels_removed.iter())
            .filter_map(|name| self.flow.bus.channel(name).ok())
            .collect();
        settle(&channels, deadline).await;
        let on_removed = |name: &str| change.channels_removed.iter().any(|c| c == name);
        let routes: Vec<&Route> = (old_routes.values())
            .filter(|r| on_removed(r.from().name()))
            .collect();
        for route in &routes {
            self.stop_consumer(&Part::Route(route.name().to_owned()), deadline)
                .await;
            route.stop_steps().await;
            if change.routes_removed.iter().any(|r| r == route.name()) {
                said.push(format!("route {} removed", route.name()));
            }
        }
        let adapters: Vec<AdapterPlan> = (self.flow.adapters.iter())
            .filter(|a| !a.is_inbound() && on_removed(&a.channel))
            .cloned()
            .collect();
        for adapter in &adapters {
            self.stop_consumer(&Part::Adapter(adapter.name.clone()), deadline)
                .await;
            if change.adapters_removed.contains(&adapter.name) {
                self.gone(&adapter.name, "removed", said);
            }
        }
        for channel in &channels {
            let name = channel.name().to_owned();
            self.stop_consumer(&Part::Output(name.clone()), deadline)
                .await;
            match self.flow.bus.remove(&name).await {
                Ok(0) | Err(_) => said.push(format!("channel {name} removed")),
                Ok(left) => said.push(format!(
                    "channel {name} removed: {left} messages still waiting there dead-lettered \
                     (channel-deleted)"
                )),
            }
        }
    }
}

/// Waits until none of `channels` holds a message or has one in processing (twice in a row,
/// a few milliseconds apart), or `deadline`.
async fn settle(channels: &[Channel], deadline: Instant) {
    let empty = || {
        channels.iter().all(|c| {
            let s = c.stats();
            s.depth == 0 && s.in_flight == 0
        })
    };
    let mut once = false;
    while Instant::now() < deadline {
        let now = empty();
        if now && once {
            return;
        }
        once = now;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
