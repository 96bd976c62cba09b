//! The flow as checked: every name resolved, every string parsed into its type.
//!
//! [Validation](crate::validate) turns a [`FlowSpec`](crate::spec::FlowSpec) into a [`Plan`],
//! or into every problem it has. A plan can not be wrong in any way validation checks: names
//! refer to declared channels or exchanges of the right kind, predicates and patterns parsed,
//! schemas loaded, durations and counts in range. The [compiler](crate::compile) builds the
//! running flow from it, and [`graph`](crate::graph) draws it.

pub mod adapter;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eip_core::channel::{ChannelKind, Overflow};
use eip_core::endpoint::RedeliveryPolicy;
use eip_core::predicate::Predicate;
use eip_core::topic::TopicPattern;

use crate::kind::AsAny;
use crate::step::{FilterConfig, StepConfig, WireTapConfig};

/// The name of the dead letter channel every flow has, declared or not.
pub const DEAD_LETTERS: &str = eip_core::bus::DEAD_LETTERS;

/// A checked flow.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The channels, in the order declared. `dead-letters` is always among them (declared, or
    /// added as a point-to-point channel at the end).
    pub channels: Vec<ChannelPlan>,
    /// The routes, in the order declared.
    pub routes: Vec<RoutePlan>,
    /// The joins, in the order declared.
    pub joins: Vec<JoinPlan>,
    /// The exchanges, in the order declared.
    pub exchanges: Vec<ExchangePlan>,
    /// The `store:` section: where durable channels keep their messages. Always present:
    /// a flow without `store:` has the default (every field `None`), and a flow with no
    /// durable channel keeps what its `store:` says without using it.
    pub store: StorePlan,
    /// The channel adapters, in the order declared.
    pub adapters: Vec<adapter::AdapterPlan>,
    /// Whether the flow records Message History (`history: true`): every channel, route and
    /// route step adds itself to the `history` header of the messages it handles.
    pub history: bool,
    /// The `admin:` section: the management API `eip run` serves; `None` when not written.
    pub admin: Option<AdminPlan>,
}

impl Plan {
    /// The channel named `name`.
    pub fn channel(&self, name: &str) -> Option<&ChannelPlan> {
        self.channels.iter().find(|c| c.name == name)
    }

    /// The exchange named `name`.
    pub fn exchange(&self, name: &str) -> Option<&ExchangePlan> {
        self.exchanges.iter().find(|x| x.name == name)
    }

    /// The adapter named `name`.
    pub fn adapter(&self, name: &str) -> Option<&adapter::AdapterPlan> {
        self.adapters.iter().find(|a| a.name == name)
    }

    /// Whether any channel is durable, and so the flow needs the durable store.
    pub fn has_durable_channels(&self) -> bool {
        self.channels.iter().any(|c| c.durable)
    }
}

/// The checked `store:` of a flow: what the flow file says about the embedded durable store.
/// Where the store finally lives is decided by whoever runs the flow (`eip run --data-dir`
/// overrides `path`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorePlan {
    /// `path:` the data directory, joined to the base directory the flow was validated with
    /// (a flow file's own directory): a relative path written in the file is relative to the
    /// file, and an absolute one stays as written. `None` when not written.
    pub path: Option<PathBuf>,
    /// `max-bytes:` the disk cap in bytes, at least 1. `None` when not written (no cap set by
    /// the flow).
    pub max_bytes: Option<u64>,
}

/// The checked `admin:` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminPlan {
    /// `listen:` the address the server binds (default [`DEFAULT_ADMIN_LISTEN`]).
    pub listen: std::net::SocketAddr,
    /// `token:` the environment variable holding the bearer token (read when the server
    /// starts); `None` on a loopback address without one.
    pub token_env: Option<String>,
}

/// Where the admin server listens when `admin:` names no address: loopback only.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:9090";

/// A checked channel.
#[derive(Debug, Clone)]
pub struct ChannelPlan {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: ChannelKind,
    /// Messages held at most; `None` for the default.
    pub capacity: Option<usize>,
    /// The JSON Schema messages must fit, and the invalid message channel for those that do
    /// not. Validation guarantees both or neither.
    pub datatype: Option<DatatypePlan>,
    /// The dead letter channel (a point-to-point channel of the plan); `None` means
    /// [`DEAD_LETTERS`].
    pub dead_letter: Option<String>,
    /// How long a message may wait before it expires.
    pub time_to_live: Option<Duration>,
    /// How consumers of this channel retry a failed message; `None` for the default.
    pub redelivery: Option<RedeliveryPolicy>,
    /// Publish-subscribe only: what a full subscriber queue does.
    pub overflow: Option<Overflow>,
    /// Whether the channel keeps its messages on disk (Guaranteed Delivery): written
    /// `durable: true`, or the dead letter or invalid message channel of a durable channel,
    /// which validation makes durable too.
    pub durable: bool,
    /// `store:` the broker that keeps the channel's messages, shared by every process
    /// attached; `None` keeps them in this process (or in the embedded store, if durable).
    pub broker: Option<BrokerStorePlan>,
}

/// A channel kept in a broker: where, and how sends wait for it.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerStorePlan {
    /// The broker and the destination.
    pub place: BrokerPlace,
    /// Sends waiting for the broker's confirm at once; `None` for the default.
    pub publish_window: Option<usize>,
    /// How long a send retries a broker it can not reach; `None` for the default.
    pub retry_for: Option<Duration>,
}

/// Where in a broker a channel's messages are.
#[derive(Debug, Clone, PartialEq)]
pub enum BrokerPlace {
    /// A point-to-point channel in a durable RabbitMQ queue.
    RabbitMqQueue {
        /// The server, as written (`${…}` read when the channel is built).
        url: String,
        /// The queue.
        queue: String,
    },
    /// A publish-subscribe channel through a durable RabbitMQ fanout exchange.
    RabbitMqExchange {
        /// The server, as written.
        url: String,
        /// The exchange.
        exchange: String,
    },
    /// A channel in a JetStream stream.
    JetStream {
        /// The server, as written.
        url: String,
        /// The stream.
        stream: String,
        /// The subject published to; `None`: `eip.STREAM`.
        subject: Option<String>,
        /// How long JetStream waits for an ack before delivering again; `None` for the
        /// default.
        ack_wait: Option<Duration>,
    },
}

impl BrokerPlace {
    /// The broker and destination in a few words, with no password: `rabbitmq queue orders`.
    pub fn describe(&self) -> String {
        match self {
            BrokerPlace::RabbitMqQueue { queue, .. } => format!("rabbitmq queue {queue}"),
            BrokerPlace::RabbitMqExchange { exchange, .. } => {
                format!("rabbitmq exchange {exchange}")
            }
            BrokerPlace::JetStream { stream, .. } => format!("jetstream stream {stream}"),
        }
    }
}

/// A datatype: the schema, read and parsed, and where invalid messages go.
#[derive(Debug, Clone)]
pub struct DatatypePlan {
    /// The schema file as written in the flow (relative to the flow file).
    pub path: String,
    /// The schema.
    pub schema: serde_json::Value,
    /// The invalid message channel (a point-to-point channel of the plan).
    pub invalid: String,
}

/// Where a route sends: a channel or an exchange, by name, or a template that names one per
/// message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetRef {
    /// A channel of the plan.
    Channel(String),
    /// An exchange of the plan.
    Exchange(String),
    /// A [template](eip_core::template) (checked to parse) whose text, filled in by each
    /// message, names a channel or exchange.
    Template(String),
}

impl TargetRef {
    /// The name (a template's text).
    pub fn name(&self) -> &str {
        match self {
            TargetRef::Channel(name) | TargetRef::Exchange(name) | TargetRef::Template(name) => {
                name
            }
        }
    }
}

/// A checked route.
#[derive(Debug, Clone)]
pub struct RoutePlan {
    /// Its name (given, or `route-N`).
    pub name: String,
    /// The channel it consumes.
    pub from: String,
    /// What it does to each message before the action, in order: the route's `wire-tap:`
    /// and `filter:` shorthands first (in that order), then its `steps:`.
    pub steps: Vec<StepPlan>,
    /// Where the messages go.
    pub action: ActionPlan,
    /// `on-error:` where a message goes whose step failed once the channel's redelivery
    /// policy is used up, instead of the dead letter channel; `None`: the dead letter channel.
    pub on_error: Option<OnErrorPlan>,
    /// `concurrency:` how many of its messages are processed at once, from 1 (the default) to
    /// [`MAX_CONCURRENCY`]. Above 1 their order downstream is not kept.
    pub concurrency: usize,
}

/// The most messages a route may process at once (`concurrency:`).
pub const MAX_CONCURRENCY: usize = 10_000;

/// A checked `on-error:` of a route or of a step: where a message whose step failed goes (see
/// the book's error handling chapter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnErrorPlan {
    /// The channel (of the plan, never the one the route consumes) it goes to, with a death
    /// record: reason `max-redeliveries` from a route's `on-error`, `rejected` from a step's,
    /// and the step's place and error.
    pub to: String,
}

/// A checked route step.
#[derive(Debug, Clone)]
pub struct StepPlan {
    /// Its kind's name (`filter`).
    pub kind: &'static str,
    /// Its key path, for messages (`routes[0].steps[1]`; a shorthand's own key,
    /// `routes[0].filter`).
    pub key: String,
    /// What its kind made of its settings.
    pub config: Arc<dyn StepConfig>,
    /// `on-error:` of a step that calls out: where a message it fails on goes at once, without
    /// redelivery; `None`: its failure fails the route for the message.
    pub on_error: Option<OnErrorPlan>,
}

impl StepPlan {
    /// A Message Filter: what matches `predicate` goes on, the rest to `discard` (or nowhere).
    pub fn filter(predicate: Predicate, discard: Option<String>) -> Self {
        let text = predicate.to_string();
        StepPlan {
            kind: "filter",
            key: String::new(),
            config: Arc::new(FilterConfig {
                predicate,
                text,
                discard,
            }),
            on_error: None,
        }
    }

    /// A wire tap to `channel` that waits for room.
    pub fn wire_tap(channel: impl Into<String>) -> Self {
        StepPlan {
            kind: "wire-tap",
            key: String::new(),
            config: Arc::new(WireTapConfig {
                channel: channel.into(),
                wait: true,
            }),
            on_error: None,
        }
    }

    /// This step with its key path set.
    pub(crate) fn at_key(mut self, key: String) -> Self {
        self.key = key;
        self
    }

    /// The configuration as its kind's own type (`FilterConfig`, ...), if it is one.
    pub fn config_as<T: 'static>(&self) -> Option<&T> {
        // Through the trait object, not the `Arc` (which is `Any` too).
        AsAny::as_any(&*self.config).downcast_ref::<T>()
    }
}

/// What a route does with a message that passed its filter.
#[derive(Debug, Clone)]
pub enum ActionPlan {
    /// A copy to each target, in order (one target is the usual case).
    To(Vec<TargetRef>),
    /// The first matching clause's target, else `otherwise`, else the dead letter channel with
    /// reason `no-route`.
    Choice {
        /// The clauses in order: the predicate and its target.
        when: Vec<(Predicate, TargetRef)>,
        /// Where a message no clause matches goes.
        otherwise: Option<TargetRef>,
    },
    /// A copy to each recipient.
    RecipientList(RecipientsPlan),
    /// Each message to one target, picked by the strategy (a closed channel is passed over).
    LoadBalance {
        /// The channels or exchanges, in order; never a template.
        targets: Vec<TargetRef>,
        /// How the target is picked.
        strategy: eip_core::router::Strategy,
    },
}

/// The recipients of a recipient list.
#[derive(Debug, Clone)]
pub enum RecipientsPlan {
    /// Fixed targets, each once.
    Fixed(Vec<TargetRef>),
    /// Read from this header of each message (comma-separated names).
    Header(String),
}

/// A checked join.
#[derive(Debug, Clone)]
pub struct JoinPlan {
    /// The source: a publish-subscribe channel.
    pub from: String,
    /// The destination channel.
    pub to: String,
    /// Only matching messages cross.
    pub filter: Option<Predicate>,
    /// The hop count.
    pub hops: u32,
    /// Whether the join is archival (the destination is a point-to-point channel).
    pub archival: bool,
}

/// A checked exchange.
#[derive(Debug, Clone)]
pub struct ExchangePlan {
    /// Its name.
    pub name: String,
    /// The channel that takes messages no binding matches.
    pub alternate: Option<String>,
    /// The bindings, in order.
    pub bindings: Vec<BindingPlan>,
}

/// A checked binding.
#[derive(Debug, Clone)]
pub struct BindingPlan {
    /// The pattern; `None` matches every subject.
    pub key: Option<TopicPattern>,
    /// The target channels, each once.
    pub to: Vec<String>,
}
