//! Running a compiled flow: a consumer per route, and outputs for the channels nothing reads.
//!
//! [`Flow::start`] subscribes and spawns everything on the current tokio runtime. A channel
//! that no route and no outbound adapter consumes is an output of the flow: the running flow
//! hands each message arriving there to an [`Output`] callback (`eip run` prints it as a JSON
//! line) and acknowledges it. Adapters are started apart, once connected
//! ([`Flow::connect_adapters`], [`RunningFlow::attach`]).
//!
//! Stopping is bounded by the limit it is given, whatever a consumer waits for.
//! [`RunningFlow::drain`] stops the inbound adapters and waits until no channel holds a message
//! and nothing is in processing, or the limit has passed; then the route steps that hold
//! messages hand them on (an aggregator's open groups, as its `on-stop:` says), and it waits
//! again, until nothing is held. [`RunningFlow::shut_down`] drains,
//! then stops every consumer at once: a message waiting out a redelivery backoff is given back
//! to its channel at once, a call still in progress when the limit passes is abandoned and its
//! message given back too, unacknowledged (a durable channel delivers it again on the next run,
//! marked redelivered; a memory channel's messages end with the process). [`Leftovers`] says
//! what was left.
//!
//! Every consumer is known by the part it runs ([`Part`]: a route, an output, an outbound
//! adapter), and every inbound adapter by its name, so that a reload ([`super::reshape`]) can
//! stop and start them one by one. A route consuming a publish-subscribe channel takes its
//! messages through a subscription the running flow keeps apart from the consumer
//! ([`SharedSubscription`]): a route replaced by a reload hands it to its successor, which
//! takes the copies published in between.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use eip_core::channel::{Channel, ChannelStats, Delivery, PublishSubscribe, Subscriber};
use eip_core::endpoint::{Consumer, ConsumerHandle, Inbox, Stopped};
use eip_core::message::Message;
use tokio::time::Instant;

use super::adapters::{ConnectedAdapters, Start};
use super::{Flow, Route};
use crate::kind::Started;

/// What a running flow does with a message that reaches an output channel: called with the
/// channel's name and the message, which is then acknowledged.
pub type Output = Arc<dyn Fn(&str, &Message) + Send + Sync>;

/// A flow whose routes are consuming.
pub struct RunningFlow {
    /// The flow as it runs now: a reload replaces its parts.
    pub(super) flow: Flow,
    /// The routes' consumers, the outputs, and the outbound adapters' consumers, each with
    /// the part it runs.
    pub(super) consumers: Vec<(Part, ConsumerHandle)>,
    /// The inbound adapters, by name, stopped first.
    pub(super) inbound: Vec<(String, Box<dyn Started>)>,
    /// The subscriptions of the routes consuming publish-subscribe channels, by route name.
    pub(super) subscriptions: HashMap<String, SharedSubscription>,
    /// What becomes of the messages reaching output channels.
    pub(super) output: Output,
    /// The channels that are no outputs though nothing consumes them (see
    /// [`Flow::start_keeping`]).
    pub(super) kept: Vec<String>,
}

/// What a consumer of a running flow runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    /// The route of that name.
    Route(String),
    /// The output of the channel of that name.
    Output(String),
    /// The outbound adapter or bridge of that name.
    Adapter(String),
}

/// A route's subscription to a publish-subscribe channel, kept by the running flow: the
/// route's consumer takes from it, and so does the consumer of the route that replaces it.
#[derive(Clone)]
pub(super) struct SharedSubscription(Arc<tokio::sync::Mutex<Subscriber>>);

impl SharedSubscription {
    fn new(subscriber: Subscriber) -> Self {
        SharedSubscription(Arc::new(tokio::sync::Mutex::new(subscriber)))
    }

    /// Ends the subscription of a route that is gone (its consumer stopped): on a durable
    /// channel the durable subscription `route` is removed, elsewhere the copies it still
    /// holds are taken. Either way what it held goes to the dead letter channel with reason
    /// `channel-deleted`; how many.
    pub(super) async fn end(self, channel: &PublishSubscribe, route: &str) -> usize {
        if channel.is_durable() {
            drop(self);
            return channel.unsubscribe(route).await.unwrap_or(0);
        }
        let mut subscriber = self.0.lock().await;
        let mut ended = 0;
        while let Ok(delivery) = subscriber.try_recv() {
            let why = format!("route `{route}` removed by a reload");
            delivery
                .dead_letter(eip_core::message::DeathReason::ChannelDeleted, Some(why))
                .await;
            ended += 1;
        }
        ended
    }
}

impl Inbox for SharedSubscription {
    fn next_delivery(&mut self) -> impl Future<Output = Option<Delivery>> + Send {
        let shared = self.0.clone();
        // Cancelled when the consumer stops: the lock is let go, what the subscription holds
        // stays in it.
        async move { shared.lock().await.recv().await }
    }
}

/// One channel's counters, for the periodic counters line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelCounters {
    /// The channel.
    pub channel: String,
    /// Its counters.
    pub stats: ChannelStats,
}

impl std::fmt::Display for ChannelCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.stats;
        write!(
            f,
            "{}: in {}, out {}, dead letters {}, invalid {}, waiting {}",
            self.channel,
            s.accepted + s.invalid,
            s.acked,
            s.dead_lettered,
            s.invalid,
            s.depth + s.in_flight
        )
    }
}

impl Flow {
    /// Starts a consumer for every route and an output for every channel no route consumes,
    /// on the current tokio runtime. A route's consumer hands it up to its `concurrency:`
    /// messages at once, each acknowledged on its own once the route has carried it out. Publish-subscribe channels are subscribed before this
    /// returns, so nothing sent afterwards is missed.
    pub fn start(&self, output: Output) -> RunningFlow {
        self.start_keeping(output, &[])
    }

    /// [`start`](Self::start), except that the channels named in `kept` that nothing consumes
    /// are no outputs: what reaches them waits there, to be browsed and taken from outside (the
    /// dead letters the admin server replays), and draining does not wait for them to empty.
    pub fn start_keeping(&self, output: Output, kept: &[String]) -> RunningFlow {
        let mut running = RunningFlow {
            flow: self.clone(),
            consumers: Vec::new(),
            inbound: Vec::new(),
            subscriptions: HashMap::new(),
            output,
            kept: Vec::new(),
        };
        for route in &self.routes {
            running.start_route(route);
        }
        for channel in self.unconsumed() {
            if kept.iter().any(|k| k == channel.name()) {
                running.kept.push(channel.name().to_owned());
                continue;
            }
            running.start_output(channel);
        }
        running
    }

    /// The channels no route and no outbound adapter consumes: the flow's outputs.
    pub(super) fn unconsumed(&self) -> impl Iterator<Item = &Channel> {
        self.channels.iter().filter(|channel| {
            self.routes_from(channel.name()).next().is_none()
                && !self
                    .adapters
                    .iter()
                    .any(|a| !a.is_inbound() && a.channel == channel.name())
        })
    }
}

impl RunningFlow {
    /// Starts a consumer for `route`: on a publish-subscribe channel through the route's
    /// subscription, taken over from a route of the same name that ran before it.
    pub(super) fn start_route(&mut self, route: &Route) {
        let handle = match route.from() {
            Channel::PointToPoint(c) => Consumer::new(c.receiver(), route.clone())
                .concurrency(route.concurrency())
                .pause_gate(route.pause_gate())
                .spawn(),
            Channel::PublishSubscribe(c) => {
                let subscription = self
                    .subscriptions
                    .entry(route.name().to_owned())
                    .or_insert_with(|| SharedSubscription::new(subscribe(c, route.name())))
                    .clone();
                Consumer::new(subscription, route.clone())
                    .concurrency(route.concurrency())
                    .pause_gate(route.pause_gate())
                    .spawn()
            }
        };
        self.consumers
            .push((Part::Route(route.name().to_owned()), handle));
    }

    /// Starts the output of `channel`: each message arriving there handed to the output
    /// callback, then acknowledged.
    pub(super) fn start_output(&mut self, channel: &Channel) {
        let name: Arc<str> = channel.name().into();
        let output = self.output.clone();
        let sink = tower::service_fn(move |msg: Message| {
            output(&name, &msg);
            std::future::ready(Ok::<(), Infallible>(()))
        });
        let handle = match channel {
            Channel::PointToPoint(c) => Consumer::new(c.receiver(), sink).spawn(),
            Channel::PublishSubscribe(c) => Consumer::new(subscribe(c, OUTPUT), sink).spawn(),
        };
        self.consumers
            .push((Part::Output(channel.name().to_owned()), handle));
    }

    /// Takes out the consumer running `part`, if there is one.
    pub(super) fn take_consumer(&mut self, part: &Part) -> Option<ConsumerHandle> {
        let at = self.consumers.iter().position(|(p, _)| p == part)?;
        Some(self.consumers.remove(at).1)
    }

    /// Takes out the inbound adapter `name`, if it runs.
    pub(super) fn take_inbound(&mut self, name: &str) -> Option<Box<dyn Started>> {
        let at = self.inbound.iter().position(|(n, _)| n == name)?;
        Some(self.inbound.remove(at).1)
    }
}

/// The counters of `channels`, in their order; a channel's dead letters include those of the
/// `routes` consuming it.
pub(super) fn counters_of<'a>(
    channels: impl IntoIterator<Item = &'a Channel>,
    routes: &[super::Route],
) -> Vec<ChannelCounters> {
    // What the routes dead-lettered, by the channel they consume: one pass over the routes,
    // so a flow of many channels and routes is counted in time linear in both.
    let mut dead_lettered: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for route in routes {
        *dead_lettered.entry(route.from().name()).or_default() += route.stats().dead_lettered;
    }
    channels
        .into_iter()
        .map(|c| {
            let mut stats = c.stats();
            stats.dead_lettered += dead_lettered.get(c.name()).copied().unwrap_or(0);
            ChannelCounters {
                channel: c.name().to_owned(),
                stats,
            }
        })
        .collect()
}

/// The name of the durable subscription an output takes on a durable channel.
pub(super) const OUTPUT: &str = "eip-run-output";

/// A subscription for the consumer `name`: on a durable channel a durable subscription of that
/// name, so what it has not processed waits for it across a restart (and is kept while the flow
/// is down); otherwise one that ends with the consumer.
pub(super) fn subscribe(channel: &PublishSubscribe, name: &str) -> Subscriber {
    if channel.is_durable() {
        channel.durable_subscribe(name)
    } else {
        channel.subscribe()
    }
}

impl RunningFlow {
    /// Starts the connected adapters and bridges: an outbound one as a consumer of its
    /// channel, an inbound one feeding its channel. The flow has then started (see
    /// [`FlowView::waiting_for`](super::FlowView::waiting_for)).
    pub fn attach(&mut self, adapters: ConnectedAdapters) {
        for connected in adapters.into_inner() {
            self.start_adapter(connected);
        }
        self.flow.readiness.started();
    }

    /// Starts one connected adapter or bridge.
    pub(super) fn start_adapter(&mut self, connected: super::adapters::Connected) {
        let name = connected.plan.name.clone();
        match connected.start() {
            Start::Consumer(handle) => self.consumers.push((Part::Adapter(name), handle)),
            Start::Inbound(started) => self.inbound.push((name, started)),
        }
    }

    /// Every channel's counters, in the order declared. A channel's dead letters include those
    /// of the routes consuming it (a message no clause matched died on that channel).
    pub fn counters(&self) -> Vec<ChannelCounters> {
        counters_of(&self.flow.channels, &self.flow.routes)
    }

    /// The flow as it runs now (a reload changes its channels, routes and adapters).
    pub fn flow(&self) -> &Flow {
        &self.flow
    }

    /// The names of the channels whose messages outlive the process (durable channels).
    pub fn durable_channels(&self) -> Vec<String> {
        self.flow
            .channels
            .iter()
            .filter(|c| c.is_durable())
            .map(|c| c.name().to_owned())
            .collect()
    }

    /// The channels kept rather than output (see [`Flow::start_keeping`]).
    pub fn kept(&self) -> &[String] {
        &self.kept
    }

    /// Whether no channel holds a message and none is in processing (the kept channels'
    /// waiting messages aside: they wait on purpose).
    pub fn is_idle(&self) -> bool {
        self.flow.channels.iter().all(|c| {
            if self.kept.iter().any(|k| k == c.name()) {
                return c.stats().in_flight == 0;
            }
            let s = c.stats();
            s.depth == 0 && s.in_flight == 0
        })
    }

    /// Waits until the flow is idle (twice in a row, a few milliseconds apart, so a message
    /// between two channels is not missed), or `limit` has passed. Whether it became idle.
    pub async fn settle(&self, limit: Duration) -> bool {
        self.settle_until(Instant::now() + limit).await
    }

    async fn settle_until(&self, deadline: Instant) -> bool {
        let mut idle_once = false;
        loop {
            let idle = self.is_idle();
            if idle && idle_once {
                return true;
            }
            idle_once = idle;
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Stops the inbound adapters, all at once: nothing new enters the flow (an HTTP request in
    /// progress is answered; a file or row being sent finishes). Stopping twice does nothing
    /// more.
    pub async fn stop_inbound(&mut self) {
        futures::future::join_all(self.inbound.drain(..).map(|(_, a)| a.shutdown())).await;
    }

    /// Stops the inbound adapters and waits until the flow is idle, both within `limit`: an
    /// inbound adapter still stopping then (a file waiting for room in a full channel) is not
    /// waited for. Then the steps that hold messages hand them on (an aggregator's `on-stop:`)
    /// and it waits for those to settle too. Whether the flow became idle.
    pub async fn drain(&mut self, limit: Duration) -> bool {
        self.drain_until(Instant::now() + limit).await
    }

    async fn drain_until(&mut self, deadline: Instant) -> bool {
        self.flow.readiness.stopping();
        if tokio::time::timeout_at(deadline, self.stop_inbound())
            .await
            .is_err()
        {
            tracing::warn!("inbound adapters still stopping when the time was up: not waited for");
        }
        let idle = self.settle_until(deadline).await;
        self.release_held(deadline).await.unwrap_or(idle)
    }

    /// Once nothing more comes in: every route step hands on what it still holds (an
    /// aggregator's open groups, as its `on-stop:` says), and what it handed on settles;
    /// round after round until no step held anything (a group released into a channel that
    /// another aggregator consumes opens a group there), or `deadline`. Routes hand on one at
    /// a time, each followed by a settle: a route fed by another is never asked while what the
    /// other handed on is still on its way to it, so it hands on all of that at once in its
    /// turn, never a part. Whether the flow then became idle; `None` when no step held
    /// anything.
    async fn release_held(&self, deadline: Instant) -> Option<bool> {
        let mut idle = None;
        loop {
            let mut any = false;
            for route in &self.flow.routes {
                let Ok(acted) = tokio::time::timeout_at(deadline, route.stop_steps()).await else {
                    tracing::warn!(
                        "route steps still handing on what they held when the time was up"
                    );
                    return Some(false);
                };
                if !acted {
                    continue;
                }
                any = true;
                let settled = self.settle_until(deadline).await;
                idle = Some(settled);
                if !settled {
                    return idle;
                }
            }
            if !any {
                return idle;
            }
        }
    }

    /// Stops gracefully within `limit`: [drains](Self::drain), then stops every consumer at
    /// once, each settling the calls it has in progress if it can before the limit. Returns
    /// the channels still holding messages, with how many.
    pub async fn stop(self, limit: Duration) -> Vec<(String, usize)> {
        self.shut_down(limit).await.channels
    }

    /// [`stop`](Self::stop), saying everything that was left: the channels still holding
    /// messages, and what the consumers gave back unacknowledged (messages waiting out a
    /// redelivery backoff, calls abandoned when the limit passed). Returns soon after `limit`
    /// whatever the consumers were waiting for.
    pub async fn shut_down(mut self, limit: Duration) -> Leftovers {
        let deadline = Instant::now() + limit;
        self.drain_until(deadline).await;
        let rest = deadline.saturating_duration_since(Instant::now());
        let consumers = std::mem::take(&mut self.consumers);
        let stopping = consumers.into_iter().map(|(_, c)| c.shutdown_within(rest));
        let given_back = futures::future::join_all(stopping).await.into_iter().sum();
        let channels = self
            .flow
            .channels
            .iter()
            .map(|c| (c.name().to_owned(), c.stats().depth))
            .filter(|(_, depth)| *depth > 0)
            .collect();
        Leftovers {
            channels,
            given_back,
        }
    }
}

/// What a stopped flow left behind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// The channels still holding messages, with how many, in the order declared (messages
    /// given back included).
    pub channels: Vec<(String, usize)>,
    /// What the consumers gave back to their channels unacknowledged.
    pub given_back: Stopped,
}
