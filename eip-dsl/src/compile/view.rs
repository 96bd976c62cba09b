//! What a flow shows of itself to whoever watches it while it runs (the admin server, its
//! metrics): its channels with where they keep their messages, its routes, exchanges and
//! joins as they are now, its adapters and bridges with whether they are connected, the
//! durable store's counters, and whether the flow is ready.
//!
//! A [`FlowView`] is taken from the compiled flow ([`Flow::view`]) before anything starts and
//! stays true while the flow runs: it holds the same bus (counters are read when asked), the
//! flow's [`Readiness`], which connecting the adapters, starting the flow and draining it
//! update, and a shared handle on the flow's parts (its channels, routes and adapters, and
//! the plan they were made from). A reload that changes the parts swaps them behind that
//! handle at once for every view: a watcher asking after it sees the new channels, routes
//! and adapters, never a mix. Each part list is read whole ([`FlowView::channels`] answers
//! the list as it is when asked), and [`FlowView::generation`] counts the swaps, so a watcher
//! that keeps something computed from the plan knows when to compute it again. Nothing is
//! kept in the process apart from the flow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use eip_adapters::health::{ConnectionHealth, HealthReport};
use eip_core::MessageBus;
use eip_core::channel::Channel;
use eip_core::store::durable::Durable;

use super::{Flow, Route};
use crate::plan::Plan;
use crate::plan::adapter::AdapterPlan;

/// Where a channel keeps its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelStore {
    /// In the process's memory: lost when it ends.
    Memory,
    /// In the embedded durable store's data directory.
    Durable,
    /// In a broker: the broker and destination in a few words (`rabbitmq queue orders`).
    Broker(String),
}

/// A running flow as its watchers see it; cheap to clone.
#[derive(Clone)]
pub struct FlowView {
    pub(super) bus: MessageBus,
    pub(super) parts: Live,
    pub(super) durable: Option<Arc<Durable>>,
    pub(super) readiness: Readiness,
    pub(super) detours: super::Detours,
}

impl std::fmt::Debug for FlowView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = self.parts.get();
        f.debug_struct("FlowView")
            .field("channels", &parts.channels.len())
            .field("routes", &parts.routes.len())
            .field("adapters", &parts.adapters.len())
            .field("generation", &parts.generation)
            .finish()
    }
}

/// The parts of a running flow, as its watchers see them: swapped whole by a reload.
#[derive(Clone, Default)]
pub(super) struct Parts {
    pub(super) channels: Arc<[(Channel, ChannelStore)]>,
    pub(super) routes: Arc<[Route]>,
    pub(super) adapters: Arc<[AdapterPlan]>,
    pub(super) plan: Arc<Plan>,
    /// How many times the parts were swapped since the flow was compiled.
    pub(super) generation: u64,
}

/// The handle a flow and its views share on the flow's [`Parts`].
#[derive(Clone, Default)]
pub(super) struct Live(Arc<RwLock<Parts>>);

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("generation", &self.get().generation)
            .finish()
    }
}

impl Live {
    pub(super) fn new(parts: Parts) -> Live {
        Live(Arc::new(RwLock::new(parts)))
    }

    /// The parts as they are now (the lists are shared, not copied).
    pub(super) fn get(&self) -> Parts {
        // A lock poisoned by a panic elsewhere still holds a whole value: it is replaced in
        // one assignment.
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Puts `parts` in place of the current ones, counting one more generation.
    pub(super) fn swap(&self, mut parts: Parts) {
        let mut current = self.0.write().unwrap_or_else(|p| p.into_inner());
        parts.generation = current.generation + 1;
        *current = parts;
    }
}

/// The store's counters a watcher sees.
#[derive(Debug, Clone, PartialEq)]
pub struct DurableStats {
    /// Transactions committed since the store was opened.
    pub commits: u64,
    /// Records (messages, key table entries) those commits wrote.
    pub records: u64,
    /// Acknowledgements those commits wrote.
    pub acks: u64,
    /// How long the commits took: each bucket's upper bound in seconds with the commits that
    /// took at most that long (cumulative).
    pub commit_buckets: Vec<(f64, u64)>,
    /// The commits timed.
    pub commit_count: u64,
    /// Their time together, in seconds.
    pub commit_seconds: f64,
}

impl FlowView {
    /// The bus: channels and exchanges by name, as they are now.
    pub fn bus(&self) -> &MessageBus {
        &self.bus
    }

    /// The channels in the order declared, each with where it keeps its messages, as they
    /// are now.
    pub fn channels(&self) -> Arc<[(Channel, ChannelStore)]> {
        self.parts.get().channels
    }

    /// The routes in the order declared, as they are now.
    pub fn routes(&self) -> Arc<[Route]> {
        self.parts.get().routes
    }

    /// The adapters and bridges in the order declared, as they are now.
    pub fn adapters(&self) -> Arc<[AdapterPlan]> {
        self.parts.get().adapters
    }

    /// The checked plan the flow's parts were made from, as it is now.
    pub fn plan(&self) -> Arc<Plan> {
        self.parts.get().plan
    }

    /// How many times a reload changed the flow's parts (0 until one does).
    pub fn generation(&self) -> u64 {
        self.parts.get().generation
    }

    /// Every channel's counters, in the order declared, as
    /// [`RunningFlow::counters`](super::RunningFlow::counters) reads them.
    pub fn counters(&self) -> Vec<super::ChannelCounters> {
        let parts = self.parts.get();
        super::run::counters_of(parts.channels.iter().map(|(c, _)| c), &parts.routes)
    }

    /// The counters of `channel` alone, as [`counters`](Self::counters) counts them.
    pub fn counters_of(&self, channel: &Channel) -> super::ChannelCounters {
        let mut counters = super::run::counters_of([channel], &self.routes());
        counters.pop().unwrap_or_else(|| super::ChannelCounters {
            channel: channel.name().to_owned(),
            stats: channel.stats(),
        })
    }

    /// The embedded durable store, when the flow has durable channels.
    pub fn durable_store(&self) -> Option<&Arc<Durable>> {
        self.durable.as_ref()
    }

    /// The durable store's counters, when the flow has durable channels.
    pub fn durable_stats(&self) -> Option<DurableStats> {
        let stats = self.durable.as_ref()?.store().stats();
        let latency = stats.commit_latency;
        Some(DurableStats {
            commits: stats.commits,
            records: stats.records_committed,
            acks: stats.acks_committed,
            commit_buckets: latency.cumulative().collect(),
            commit_count: latency.count(),
            commit_seconds: latency.total_seconds(),
        })
    }

    /// Where the adapter `name` is connected (for an HTTP server, the address it is bound
    /// to), once it is.
    pub fn connected(&self, name: &str) -> Option<String> {
        self.readiness.lock().connected.get(name).cloned()
    }

    /// The pause switches of the adapters and bridges (see [`Detours`](super::Detours)).
    pub fn detours(&self) -> &super::Detours {
        &self.detours
    }

    /// What the bridge `name`'s connection has been through: whether it is up, its
    /// reconnections and its last error; `None` for an adapter (which keeps no such record)
    /// or a bridge not connected yet.
    pub fn health(&self, name: &str) -> Option<HealthReport> {
        let health = self.readiness.lock().health.get(name).cloned();
        health.map(|h| h.report())
    }

    /// What the flow still waits for before it is ready, in a few words each; empty when it
    /// is ready: every adapter and bridge connected, the flow started (its routes subscribed,
    /// its adapters attached), and every channel kept in a broker bound. A flow that is
    /// stopping is not ready.
    pub async fn waiting_for(&self) -> Vec<String> {
        let mut waiting = Vec::new();
        let parts = self.parts.get();
        {
            let state = self.readiness.lock();
            if state.stopping {
                waiting.push("the flow is stopping".to_owned());
                return waiting;
            }
            for adapter in parts.adapters.iter() {
                if !state.connected.contains_key(&adapter.name) {
                    waiting.push(format!("{} `{}` connecting", adapter.noun(), adapter.name));
                }
            }
            if !state.started {
                waiting
                    .push("the flow starting (routes subscribing, adapters attaching)".to_owned());
            }
        }
        for (channel, _) in parts.channels.iter() {
            // Asked without waiting: a store that is ready answers at once.
            if let Err(late) = channel.ready(Duration::ZERO).await {
                waiting.extend(late.waiting);
            }
        }
        waiting
    }
}

/// Whether a flow is ready, as its start and stop go: shared by the flow and its views.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<Mutex<ReadyState>>);

#[derive(Debug, Default)]
struct ReadyState {
    /// The adapters connected, by name, with where.
    connected: HashMap<String, String>,
    /// The bridges' records of their connections, by name.
    health: HashMap<String, ConnectionHealth>,
    /// Whether the routes are subscribed and the adapters attached.
    started: bool,
    /// Whether the flow has begun to stop.
    stopping: bool,
}

impl Readiness {
    fn lock(&self) -> std::sync::MutexGuard<'_, ReadyState> {
        // A lock poisoned by a panic elsewhere still holds a usable value.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bridge `name` keeps the record of its connection in `health`.
    pub(super) fn keeps_health(&self, name: &str, health: ConnectionHealth) {
        self.lock().health.insert(name.to_owned(), health);
    }

    /// The adapter `name` is connected, at `endpoint`.
    pub(super) fn connected(&self, name: &str, endpoint: String) {
        self.lock().connected.insert(name.to_owned(), endpoint);
    }

    /// The adapter `name` is no longer part of the flow (a reload stopped it).
    pub(super) fn gone(&self, name: &str) {
        self.lock().connected.remove(name);
    }

    /// The routes are subscribed and the adapters attached.
    pub(super) fn started(&self) {
        self.lock().started = true;
    }

    /// The flow has begun to stop.
    pub(super) fn stopping(&self) {
        self.lock().stopping = true;
    }
}

/// Where each channel of `plan` kept elsewhere than in memory keeps its messages, by name:
/// `durable` says whether the flow has its durable store open, `brokers` whether channels with
/// a `store:` live in their brokers.
pub(super) fn channel_stores(
    plan: &Plan,
    durable: bool,
    brokers: bool,
) -> HashMap<String, ChannelStore> {
    plan.channels
        .iter()
        .filter_map(|c| {
            let kept = match &c.broker {
                Some(broker) if brokers => ChannelStore::Broker(broker.place.describe()),
                _ if c.durable && durable => ChannelStore::Durable,
                _ => return None,
            };
            Some((c.name.clone(), kept))
        })
        .collect()
}

impl Flow {
    /// The flow as its watchers see it, now and while it runs (see [`FlowView`]).
    pub fn view(&self) -> FlowView {
        FlowView {
            bus: self.bus.clone(),
            parts: self.live.clone(),
            durable: self.durable.clone(),
            readiness: self.readiness.clone(),
            detours: self.detours.clone(),
        }
    }

    /// The flow's parts as its views show them (`generation` aside: [`Live::swap`] counts).
    pub(super) fn parts(&self) -> Parts {
        Parts {
            channels: self
                .channels
                .iter()
                .map(|c| (c.clone(), self.store_of(c.name())))
                .collect(),
            routes: self.routes.iter().cloned().collect(),
            adapters: self.adapters.iter().cloned().collect(),
            plan: self.plan.clone(),
            generation: 0,
        }
    }

    /// Where the channel `name` keeps its messages.
    fn store_of(&self, name: &str) -> ChannelStore {
        self.stores
            .get(name)
            .cloned()
            .unwrap_or(ChannelStore::Memory)
    }
}
