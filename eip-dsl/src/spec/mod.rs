//! The flow as written: plain data, before anything is checked.
//!
//! A flow file is read into these types, and so is a flow made with the
//! [builder](crate::builder): both then go through the same [validation](crate::validate) into a
//! [`Plan`](crate::plan::Plan), and the same [compiler](crate::compile) into a running flow. That
//! is how a file and a builder are guaranteed to produce the same graph.
//!
//! Every value that a diagnostic may point at is [`Located`]: it carries where it was written
//! (line, column, byte range) when it came from a file, and nothing when it came from code.
//! Strings stay strings here (names, predicates, patterns, durations); validation parses them.

/// Where something was written in a flow file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Position {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// Byte offset of the first byte from the start of the file.
    pub offset: usize,
    /// Length in bytes (0 when unknown).
    pub len: usize,
}

/// A value and, when it came from a file, where.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Where it was written; `None` for a value made in code.
    pub at: Option<Position>,
}

impl<T> Located<T> {
    /// A value made in code, with no position.
    pub fn new(value: T) -> Self {
        Located { value, at: None }
    }

    /// A value read at `at`.
    pub fn at(value: T, at: Position) -> Self {
        Located {
            value,
            at: Some(at),
        }
    }
}

impl<T> From<T> for Located<T> {
    fn from(value: T) -> Self {
        Located::new(value)
    }
}

impl From<&str> for Located<String> {
    fn from(value: &str) -> Self {
        Located::new(value.to_owned())
    }
}

/// A whole flow: the top-level keys of a flow file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowSpec {
    /// `channels:` in the order written; a name written twice appears twice (validation
    /// reports it).
    pub channels: Vec<(Located<String>, ChannelSpec)>,
    /// `routes:`
    pub routes: Vec<RouteSpec>,
    /// `joins:`
    pub joins: Vec<JoinSpec>,
    /// `exchanges:` in the order written.
    pub exchanges: Vec<(Located<String>, ExchangeSpec)>,
    /// `store:` where durable channels keep their messages; `None` when the file has no
    /// `store:` section (the defaults apply).
    pub store: Option<StoreSpec>,
    /// `adapters:` in the order written: the channel adapters that connect the flow's channels
    /// to directories, HTTP and databases.
    pub adapters: Vec<(Located<String>, AdapterSpec)>,
    /// `bridges:` in the order written: the messaging bridges between the flow's channels and
    /// brokers. Same shape as an adapter; the kinds differ.
    pub bridges: Vec<(Located<String>, AdapterSpec)>,
    /// `history:` whether the flow's channels, routes and steps record themselves in each
    /// message's `history` header (Message History); `None` when the file does not say (off).
    pub history: Option<Located<bool>>,
    /// `admin:` the management API `eip run` serves while the flow runs; `None` when the
    /// file has no `admin:` section (no server, unless `eip run --admin` asks for one).
    pub admin: Option<AdminSpec>,
    /// Keys reserved for a later version; where a file has one, its position, so validation
    /// can say it is not supported yet. None is reserved at the moment.
    pub reserved: Vec<Located<String>>,
}

/// Which way an adapter or bridge moves messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// It feeds a channel (`to:`): the files of a directory, HTTP requests, a broker's queue.
    Inbound,
    /// It consumes a channel (`from:`) and writes elsewhere.
    Outbound,
}

/// The kind of a channel adapter or messaging bridge, as written (`file-in`, `http-out`,
/// `rabbitmq-in`, ...): its name in a flow file, its direction, and whether it is a bridge.
///
/// What a kind's keys are and how it connects is in its [module](crate::kind); the kinds
/// built into this `eip` are listed in [`KINDS`](crate::kind::KINDS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AdapterKind {
    name: &'static str,
    direction: Direction,
    bridge: bool,
}

impl AdapterKind {
    /// A channel adapter (declared under `adapters:`).
    pub const fn adapter(name: &'static str, direction: Direction) -> Self {
        AdapterKind {
            name,
            direction,
            bridge: false,
        }
    }

    /// A messaging bridge (declared under `bridges:`).
    pub const fn bridge(name: &'static str, direction: Direction) -> Self {
        AdapterKind {
            name,
            direction,
            bridge: true,
        }
    }

    /// Whether it is a messaging bridge (declared under `bridges:`), not a channel adapter
    /// (under `adapters:`).
    pub fn is_bridge(self) -> bool {
        self.bridge
    }

    /// Its name in a flow file.
    pub fn as_str(self) -> &'static str {
        self.name
    }

    /// Whether it feeds a channel (`to:`), rather than consuming one (`from:`).
    pub fn is_inbound(self) -> bool {
        self.direction == Direction::Inbound
    }

    /// Which way it moves messages.
    pub fn direction(self) -> Direction {
        self.direction
    }
}

/// One adapter under `adapters:`.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterSpec {
    /// Where the adapter's entry starts (its name).
    pub at: Option<Position>,
    /// `kind:` (required): its name, as written (`file-in`); [validation](crate::validate)
    /// finds the [kind](crate::kind) it names.
    pub kind: Located<String>,
    /// The channel: `to:` of an inbound adapter, `from:` of an outbound one (required).
    pub channel: Located<String>,
    /// `redelivery:` of an outbound adapter: how its consumer retries a failed message,
    /// instead of the channel's policy.
    pub redelivery: Option<RedeliverySpec>,
    /// Every other key of the entry, as written; which keys a kind has, and what their values
    /// mean, is for [validation](crate::validate) to check.
    pub settings: Vec<Setting>,
}

/// One key of an adapter's entry and its value, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The key.
    pub key: Located<String>,
    /// The value.
    pub value: Located<SettingValue>,
}

/// The value of an adapter setting, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingValue {
    /// Nothing (`key:` with no value).
    Null,
    /// A string (a number written in quotes is a string).
    Text(String),
    /// A number without quotes, as written (`8080`, `1.5`).
    Number(String),
    /// `true` or `false`.
    Bool(bool),
    /// A list of scalars, each as written.
    List(Vec<Located<String>>),
    /// A mapping (`claim: {table: orders, key: id}`).
    Map(Vec<Setting>),
}

impl SettingValue {
    /// What kind of value this is, for "found ..." in messages.
    pub fn describe(&self) -> &'static str {
        match self {
            SettingValue::Null => "nothing (null)",
            SettingValue::Text(_) => "a string",
            SettingValue::Number(_) => "a number",
            SettingValue::Bool(_) => "a boolean",
            SettingValue::List(_) => "a list",
            SettingValue::Map(_) => "a mapping",
        }
    }
}

/// The two channel kinds, as written (`point-to-point`, `publish-subscribe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KindSpec {
    /// `point-to-point`
    PointToPoint,
    /// `publish-subscribe`
    PublishSubscribe,
}

/// What a publish-subscribe channel does when a subscriber's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OverflowSpec {
    /// `backpressure`: the publisher waits.
    Backpressure,
    /// `drop-oldest`: the oldest waiting message is dead-lettered.
    DropOldest,
}

/// One channel under `channels:`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelSpec {
    /// Where the channel's entry starts (its name); for diagnostics about the whole entry.
    pub at: Option<Position>,
    /// `kind:` (required).
    pub kind: Located<KindSpec>,
    /// `capacity:` messages held at most.
    pub capacity: Option<Located<u64>>,
    /// `datatype:` a JSON Schema file, relative to the flow file's directory.
    pub datatype: Option<Located<String>>,
    /// `invalid:` the channel that takes messages that do not fit the datatype.
    pub invalid: Option<Located<String>>,
    /// `dead-letter:` the channel that takes dead letters (default: the flow's `dead-letters`).
    pub dead_letter: Option<Located<String>>,
    /// `time-to-live:` a duration such as `30s`, `500ms`, `5m`, `1h`: messages that wait longer
    /// are dead-lettered with reason `expired`.
    pub time_to_live: Option<Located<String>>,
    /// `redelivery:` how consumers of this channel retry a failed message.
    pub redelivery: Option<RedeliverySpec>,
    /// `overflow:` publish-subscribe only.
    pub overflow: Option<Located<OverflowSpec>>,
    /// `durable:` whether the channel keeps its messages on disk (Guaranteed Delivery);
    /// `None` is `false`.
    pub durable: Option<Located<bool>>,
    /// `store:` the broker that keeps the channel's messages (`{rabbitmq: {...}}` or
    /// `{jetstream: {...}}`), as written; `None` keeps them in this process.
    pub store: Option<Setting>,
}

impl ChannelSpec {
    /// A channel of `kind` with nothing else set, written at `at`.
    pub fn new(kind: Located<KindSpec>, at: Option<Position>) -> Self {
        ChannelSpec {
            at,
            kind,
            capacity: None,
            datatype: None,
            invalid: None,
            dead_letter: None,
            time_to_live: None,
            redelivery: None,
            overflow: None,
            durable: None,
            store: None,
        }
    }
}

/// `store:` the embedded durable store that keeps the messages of durable channels, in one
/// data directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreSpec {
    /// Where the `store:` key is.
    pub at: Option<Position>,
    /// `path:` the data directory, relative to the flow file's directory.
    pub path: Option<Located<String>>,
    /// `max-bytes:` the disk cap, as written: a whole number of bytes, or a number and a unit
    /// (`512 MiB`, `1.5 GB`); [validation](crate::validate::parse_byte_size) parses it. A
    /// number written without a unit is kept as its decimal digits.
    pub max_bytes: Option<Located<String>>,
}

/// `admin:` the management API's server (the Control Bus): where it listens, and the
/// environment variable that holds its bearer token.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdminSpec {
    /// Where the `admin:` key is.
    pub at: Option<Position>,
    /// `listen:` an IP address and port, as written (`127.0.0.1:9090`).
    pub listen: Option<Located<String>>,
    /// `token:` the environment variable holding the bearer token, written `${NAME}`.
    pub token: Option<Located<String>>,
}

/// `redelivery:` of a channel. Durations are strings (`100ms`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RedeliverySpec {
    /// Where the `redelivery:` key is.
    pub at: Option<Position>,
    /// `max-attempts:` deliveries in all, at least 1.
    pub max_attempts: Option<Located<u64>>,
    /// `initial-backoff:`
    pub initial_backoff: Option<Located<String>>,
    /// `max-backoff:`
    pub max_backoff: Option<Located<String>>,
    /// `multiplier:` at least 1.0.
    pub multiplier: Option<Located<f64>>,
    /// `jitter:` 0.0 to 1.0.
    pub jitter: Option<Located<f64>>,
}

/// One entry under `routes:`: messages taken from `from`, optionally filtered and tapped, then
/// sent by exactly one of `to`, `choice` (with `otherwise`), `recipient-list` or
/// `load-balance`.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteSpec {
    /// Where the route's entry starts.
    pub at: Option<Position>,
    /// `name:` optional; the default is `route-N` (N counting from 1 in file order).
    pub name: Option<Located<String>>,
    /// `from:` the channel the route consumes.
    pub from: Located<String>,
    /// `filter:` a predicate; messages that do not match are dropped (counted) or discarded.
    pub filter: Option<Located<String>>,
    /// `discard:` the channel filtered-out messages go to.
    pub discard: Option<Located<String>>,
    /// `wire-tap:` a channel that gets a copy of every message the route takes.
    pub wire_tap: Option<Located<String>>,
    /// `to:` one channel or exchange, or a list (a copy to each).
    pub to: Option<Located<Vec<Located<String>>>>,
    /// `choice:` ordered `when` clauses.
    pub choice: Option<Located<Vec<WhenSpec>>>,
    /// `otherwise:` where a message no `when` matches goes; without it, the dead letter
    /// channel with reason `no-route`.
    pub otherwise: Option<Located<String>>,
    /// `recipient-list:` a fixed list, or the header that names the recipients.
    pub recipient_list: Option<Located<RecipientsSpec>>,
    /// `load-balance:` each message to one of several targets.
    pub load_balance: Option<Located<LoadBalanceSpec>>,
    /// `steps:` what the route does to each message before it sends it on, in order.
    pub steps: Vec<StepSpec>,
    /// `on-error:` where a message whose step failed goes once the channel's redelivery
    /// policy is used up: a channel's name, or `{to: CHANNEL}`. Checked by validation.
    pub on_error: Option<Located<SettingValue>>,
    /// `concurrency:` how many messages the route processes at once (default 1). Kept as
    /// written (it may be 0, negative or fractional) so validation can say what is wrong.
    pub concurrency: Option<Located<Number>>,
}

/// One step of a route, as written: `- KIND: VALUE`, the value either the kind's main setting
/// (`- transform: '{id: .id}'`) or a mapping of its keys (`- wire-tap: {to: audit}`).
#[derive(Debug, Clone, PartialEq)]
pub struct StepSpec {
    /// Where the step's entry starts.
    pub at: Option<Position>,
    /// The step's kind, as written; [validation](crate::validate) finds the
    /// [step kind](crate::step) it names.
    pub kind: Located<String>,
    /// Its value, as written: which keys a kind has, and what their values mean, is for
    /// validation to check.
    pub value: Located<SettingValue>,
}

impl StepSpec {
    /// A step of `kind` whose value is `value`.
    pub fn new(kind: impl Into<String>, value: SettingValue) -> Self {
        StepSpec {
            at: None,
            kind: Located::new(kind.into()),
            value: Located::new(value),
        }
    }
}

impl RouteSpec {
    /// A route consuming `from` with nothing else set, written at `at`.
    pub fn new(from: Located<String>, at: Option<Position>) -> Self {
        RouteSpec {
            at,
            name: None,
            from,
            filter: None,
            discard: None,
            wire_tap: None,
            to: None,
            choice: None,
            otherwise: None,
            recipient_list: None,
            load_balance: None,
            steps: Vec::new(),
            on_error: None,
            concurrency: None,
        }
    }
}

/// One `when` clause of a `choice`.
#[derive(Debug, Clone, PartialEq)]
pub struct WhenSpec {
    /// Where the clause starts.
    pub at: Option<Position>,
    /// `when:` the predicate.
    pub when: Located<String>,
    /// `to:` the channel or exchange.
    pub to: Located<String>,
}

/// `recipient-list:` of a route.
#[derive(Debug, Clone, PartialEq)]
pub enum RecipientsSpec {
    /// A list of channel or exchange names.
    Fixed(Vec<Located<String>>),
    /// `{header: NAME}`: each message's header `NAME` holds comma-separated names.
    Header(Located<String>),
}

/// `load-balance:` of a route: `{to: [a, b], strategy: failover}`, or a list of names (round
/// robin).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadBalanceSpec {
    /// `to:` the channels or exchanges, in order.
    pub to: Located<Vec<Located<String>>>,
    /// `strategy:` `round-robin` (the default) or `failover`.
    pub strategy: Option<Located<String>>,
}

/// One entry under `joins:`.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinSpec {
    /// Where the join's entry starts.
    pub at: Option<Position>,
    /// `from:` a publish-subscribe channel.
    pub from: Located<String>,
    /// `to:` a channel or queue.
    pub to: Located<String>,
    /// `filter:` a predicate; only matching messages cross.
    pub filter: Option<Located<String>>,
    /// `hops:` the hop count, a whole number from 0 (default 10). Kept as written (it may be
    /// negative or fractional) so validation can say what is wrong with it.
    pub hops: Option<Located<Number>>,
    /// `archival:` (to a point-to-point channel only).
    pub archival: Option<Located<bool>>,
}

/// A number as written in a flow file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A whole number.
    Integer(i64),
    /// A number with a fraction (or too large for an integer).
    Float(f64),
}

/// One exchange under `exchanges:`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExchangeSpec {
    /// Where the exchange's entry starts.
    pub at: Option<Position>,
    /// `alternate:` the channel that takes messages no binding matches.
    pub alternate: Option<Located<String>>,
    /// `bindings:`
    pub bindings: Vec<BindingSpec>,
}

/// One binding of an exchange.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingSpec {
    /// Where the binding starts.
    pub at: Option<Position>,
    /// `key:` the topic pattern; none matches every subject.
    pub key: Option<Located<String>>,
    /// `to:` one channel or a list.
    pub to: Located<Vec<Located<String>>>,
}
