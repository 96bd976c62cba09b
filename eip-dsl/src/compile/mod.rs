//! Compiling a checked flow into eip-core objects: channels, exchanges, joins and routes.
//!
//! [`compile`] turns a [`Plan`] into a [`Flow`]: every channel built with its configuration
//! and registered on a [`MessageBus`], every exchange with its bindings, every join created,
//! every route made ready to consume. Nothing runs yet. A flow can then be
//! [started](Flow::start) (consumers drive the routes until it is [stopped](RunningFlow::stop))
//! or asked where a message would go ([`Flow::dry_run`]), and both use the same compiled
//! routes, exchanges and joins: what `eip route` answers is what `eip run` does.

mod adapters;
mod channels;
mod detour;
mod dry_run;
mod input;
mod reshape;
mod rest;
mod route;
mod run;
mod view;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use eip_core::MessageBus;
use eip_core::bus::BusError;
use eip_core::channel::{Channel, ChannelError, DEFAULT_CAPACITY, PointToPoint};
use eip_core::join::{JoinError, JoinId};
use eip_core::router::{RouterError, Target};
use eip_core::store::durable::{Durable, StoreConfig, StoreError};
use eip_core::topic::{Binding, ExchangeError, TopicExchange};

use crate::plan::{BindingPlan, DEAD_LETTERS, ExchangePlan, JoinPlan, Plan, TargetRef};

pub use adapters::{AdapterError, ConnectedAdapters};
pub use detour::Detours;
pub use dry_run::{DryRunError, PathReport, Report, ReportEntry, StepReport};
pub use input::{InputError, InputMessage, MessageView};
pub use reshape::{Reshape, ReshapeError, Reshaped};
pub use rest::{Rest, WeakRest, Wrapped};
pub use route::{LastError, Route, RouteFailure, RouteStats, StepStats};
pub use run::{ChannelCounters, Leftovers, Output, RunningFlow};
pub use view::{ChannelStore, DurableStats, FlowView, Readiness};

/// A plan that could not be built. Validation rules these out; seeing one means a plan was
/// made by hand, or validation missed a case (please report it).
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A channel could not be built.
    #[error("channel `{name}`: {source}")]
    Channel {
        /// The channel.
        name: String,
        /// Why.
        source: ChannelError,
    },
    /// A template of the plan does not parse, or stands where one target must be named.
    #[error("template `{template}`: {reason}")]
    Template {
        /// The template.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// A route step's settings can not run together.
    #[error("step `{step}`: {reason}")]
    Step {
        /// The step in a few words.
        step: String,
        /// Why.
        reason: String,
    },
    /// A name the plan uses is not declared in it, or is of the wrong kind.
    #[error("{what} `{name}` is not declared in the flow")]
    Unknown {
        /// "channel", "point-to-point channel", "exchange" or "channel or exchange".
        what: &'static str,
        /// The name.
        name: String,
    },
    /// Channels name each other as dead letter or invalid message channels in a circle.
    #[error(
        "channels `{0}` name each other as dead letter or invalid message channels in a circle"
    )]
    Circular(String),
    /// A datatype's schema does not compile.
    #[error("channel `{name}`: {source}")]
    Schema {
        /// The channel.
        name: String,
        /// Why.
        source: ChannelError,
    },
    /// The bus refused a channel or exchange.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// An exchange binding could not be made.
    #[error("exchange `{exchange}`: {source}")]
    Binding {
        /// The exchange.
        exchange: String,
        /// Why.
        source: ExchangeError,
    },
    /// The durable store could not be opened.
    #[error("the durable store in {}: {source}", dir.display())]
    Store {
        /// The data directory.
        dir: PathBuf,
        /// Why.
        source: StoreError,
    },
    /// A join could not be made.
    #[error("join from `{from}` to `{to}`: {source}")]
    Join {
        /// The source channel.
        from: String,
        /// The destination.
        to: String,
        /// Why.
        source: JoinError,
    },
    /// A channel kept in a broker can not be: a variable in its URL is not set, or its
    /// settings do not fit the broker.
    #[error("channel `{channel}` kept in {place}: {reason}")]
    Broker {
        /// The channel.
        channel: String,
        /// The broker and destination, without the URL (it may hold a password).
        place: String,
        /// What is wrong.
        reason: String,
    },
    /// A route could not be built.
    #[error("route `{route}`: {source}")]
    Route {
        /// The route.
        route: String,
        /// Why.
        source: RouterError,
    },
}

/// A compiled flow: its bus (channels and exchanges by name) and its routes.
#[derive(Debug, Clone)]
pub struct Flow {
    bus: MessageBus,
    routes: Vec<Route>,
    /// The channels in the order the plan declares them (`dead-letters` included).
    channels: Vec<Channel>,
    /// The channel adapters, as planned; started by [`Flow::connect_adapters`].
    adapters: Vec<crate::plan::adapter::AdapterPlan>,
    /// The invalid message channel of each datatype channel, by channel name.
    invalid: HashMap<String, String>,
    /// Whether it records Message History (`history: true`).
    history: bool,
    /// Where each channel keeps its messages, by name (absent: in memory).
    stores: HashMap<String, ChannelStore>,
    /// Whether channels with a `store:` live in their brokers (otherwise in memory).
    brokers: bool,
    /// The embedded durable store, when the flow has durable channels.
    durable: Option<Arc<Durable>>,
    /// Whether the flow is ready, as its start and stop go.
    readiness: Readiness,
    /// The adapters' and bridges' pause switches.
    detours: Detours,
    /// The checked plan it was compiled from.
    plan: Arc<Plan>,
    /// Its parts as its views see them, swapped by a reload.
    live: view::Live,
}

impl Flow {
    /// The bus holding the flow's channels and exchanges.
    pub fn bus(&self) -> &MessageBus {
        &self.bus
    }

    /// The routes, in the order declared.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }

    /// The channels, in the order declared (`dead-letters` last unless declared earlier).
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// The routes consuming the channel `name`.
    pub fn routes_from<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Route> + 'a {
        self.routes.iter().filter(move |r| r.from().name() == name)
    }
}

/// Where the durable channels of a flow keep their messages, as decided by whoever runs it
/// (`eip run` resolves `--data-dir`, the flow's `store.path` and its default into this).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// The store's data directory.
    pub data_dir: PathBuf,
    /// The disk cap in bytes; `None` for no cap.
    pub max_bytes: Option<u64>,
}

/// [`compile`], with the durable channels kept in the store `store` describes and the
/// channels with a `store:` in their brokers (connecting in the background: call it inside a
/// tokio runtime). The embedded store is opened only if the plan has a durable channel.
pub fn compile_with(plan: &Plan, store: &StoreOptions) -> Result<Flow, CompileError> {
    if !plan.has_durable_channels() {
        return build(plan, None, true);
    }
    let config = StoreConfig {
        max_bytes: store.max_bytes,
        ..StoreConfig::default()
    };
    let durable = Durable::open(&store.data_dir, config).map_err(|source| CompileError::Store {
        dir: store.data_dir.clone(),
        source,
    })?;
    build(plan, Some(Arc::new(durable)), true)
}

/// Builds the flow's objects from a checked plan, every channel in memory: a durable one too,
/// and one kept in a broker, so nothing outside the process is touched (`eip route` answers
/// this way). [`compile_with`] builds them where they live.
pub fn compile(plan: &Plan) -> Result<Flow, CompileError> {
    build(plan, None, false)
}

fn build(plan: &Plan, store: Option<Arc<Durable>>, brokers: bool) -> Result<Flow, CompileError> {
    let bus = bus(plan, store.as_ref())?;
    let channels = channels::channels(plan, &bus, store.as_ref(), brokers)?;
    for exchange in &plan.exchanges {
        bus.register_exchange(exchange_of(exchange, &bus)?)?;
    }
    for join in &plan.joins {
        create_join(&bus, join)?;
    }
    let routes = plan
        .routes
        .iter()
        .map(|route| Route::compile(route, plan, &bus, store.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut flow = Flow {
        bus,
        routes,
        channels,
        adapters: plan.adapters.clone(),
        invalid: invalid_channels(plan),
        history: plan.history,
        stores: view::channel_stores(plan, store.is_some(), brokers),
        brokers,
        durable: store,
        readiness: Readiness::default(),
        detours: Detours::default(),
        plan: Arc::new(plan.clone()),
        live: view::Live::default(),
    };
    flow.live = view::Live::new(flow.parts());
    Ok(flow)
}

/// The invalid message channel of each datatype channel of `plan`, by channel name.
fn invalid_channels(plan: &Plan) -> HashMap<String, String> {
    plan.channels
        .iter()
        .filter_map(|c| Some((c.name.clone(), c.datatype.as_ref()?.invalid.clone())))
        .collect()
}

/// Creates the join `join` on `bus`.
pub(crate) fn create_join(bus: &MessageBus, join: &JoinPlan) -> Result<JoinId, CompileError> {
    let mut made = bus.join(&join.from, &join.to)?.hops(join.hops);
    if let Some(filter) = &join.filter {
        made = made.filter(filter.clone());
    }
    made.archival(join.archival)
        .create()
        .map_err(|source| CompileError::Join {
            from: join.from.clone(),
            to: join.to.clone(),
            source,
        })
}

/// The binding `binding` of the exchange `exchange`, over channels on `bus`.
pub(crate) fn binding_of(
    exchange: &str,
    binding: &BindingPlan,
    bus: &MessageBus,
) -> Result<Binding, CompileError> {
    let targets = binding
        .to
        .iter()
        .map(|name| bus_channel(bus, name))
        .collect::<Result<Vec<_>, _>>()?;
    Binding::with_key(binding.key.clone(), targets).map_err(|source| CompileError::Binding {
        exchange: exchange.to_owned(),
        source,
    })
}

/// The bus, with its dead letter channel: a durable one when the flow declares
/// `dead-letters` durable and has a store.
fn bus(plan: &Plan, store: Option<&Arc<Durable>>) -> Result<MessageBus, CompileError> {
    Ok(match (store, plan.channel(DEAD_LETTERS)) {
        (Some(store), Some(dead_letters)) if dead_letters.durable => {
            let channel = PointToPoint::builder(DEAD_LETTERS)
                .capacity(dead_letters.capacity.unwrap_or(10 * DEFAULT_CAPACITY))
                .store(store.clone())
                .build()
                .map_err(|source| CompileError::Channel {
                    name: DEAD_LETTERS.to_owned(),
                    source,
                })?;
            MessageBus::with_dead_letters(DEFAULT_CAPACITY, channel.into())
        }
        _ => MessageBus::new(),
    })
}

/// A topic exchange with its alternate and bindings, over channels already on the bus.
fn exchange_of(exchange: &ExchangePlan, bus: &MessageBus) -> Result<TopicExchange, CompileError> {
    let built = TopicExchange::new(exchange.name.as_str());
    if let Some(alternate) = &exchange.alternate {
        built.set_alternate(Some(bus_channel(bus, alternate)?));
    }
    for binding in &exchange.bindings {
        built.bind(binding_of(&exchange.name, binding, bus)?);
    }
    Ok(built)
}

/// The channel `name` from the bus.
pub(crate) fn bus_channel(bus: &MessageBus, name: &str) -> Result<Channel, CompileError> {
    bus.channel(name).map_err(|_| CompileError::Unknown {
        what: "channel",
        name: name.to_owned(),
    })
}

/// The channel or exchange a target names.
fn bus_target(bus: &MessageBus, target: &TargetRef) -> Result<Target, CompileError> {
    let found = match target {
        TargetRef::Channel(name) => bus.channel(name).map(Target::Channel),
        TargetRef::Exchange(name) => bus.exchange(name).map(Target::Exchange),
        TargetRef::Template(text) => {
            return Err(CompileError::Template {
                template: text.clone(),
                reason: "a template names no one target: only `to` and `recipient-list` take one"
                    .to_owned(),
            });
        }
    };
    found.map_err(|_| CompileError::Unknown {
        what: "channel or exchange",
        name: target.name().to_owned(),
    })
}
