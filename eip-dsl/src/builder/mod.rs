//! The Rust builder: a flow written in code, reading top to bottom like the pattern diagrams.
//!
//! A [`FlowBuilder`] collects channels, routes, joins, exchanges, adapters and bridges, each
//! made by a small builder whose methods are the keys of the flow file ([`channel`], [`route`],
//! [`join`], [`exchange`], [`adapter`], and [`store`] for the durable store). What it builds is a [`FlowSpec`], the same plain data a flow file is read
//! into, so a flow made in Rust goes through the same [validation](crate::validate) and the
//! same [compiler](crate::compile) as a file: the two can not drift apart, and a mistake in
//! code gets the same problem, key path and "did you mean" help as the same mistake in YAML.
//! Names, predicates and topic patterns stay strings until validation parses them.
//!
//! [`FlowBuilder::compile`] gives a [`compile::Flow`], the compiled
//! flow that can be [started](crate::compile::Flow::start) or asked where a message would go
//! ([`dry_run`](crate::compile::Flow::dry_run)); the builder itself is called `FlowBuilder`
//! so the two are never confused.
//!
//! ```
//! use eip_dsl::builder::{FlowBuilder, channel, exchange, join, route};
//! use eip_dsl::compile::InputMessage;
//!
//! let flow = FlowBuilder::new()
//!     .channel("orders", channel::point_to_point())
//!     .channel("orders.big", channel::point_to_point())
//!     .channel("orders.small", channel::point_to_point())
//!     .channel("prices", channel::publish_subscribe())
//!     .channel("prices.archive", channel::point_to_point())
//!     .route(
//!         route::from("orders")
//!             .choice()
//!             .when("$.total > 1000", "orders.big")
//!             .otherwise("orders.small"),
//!     )
//!     .join(join::from("prices").to("prices.archive").archival())
//!     .exchange("market", exchange::topic().bind("price.#", ["prices"]))
//!     .compile(".")?;
//!
//! let input = InputMessage::parse(r#"{"to": "orders", "payload": {"total": 5000}}"#)?;
//! assert_eq!(flow.dry_run(&input)?.stored, ["orders", "orders.big"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod adapter;
pub mod channel;
pub mod exchange;
pub mod join;
mod listing;
pub mod route;
pub mod step;
pub mod store;

use std::path::Path;

use crate::compile::{self, CompileError};
use crate::diagnostic::FlowErrors;
use crate::plan::Plan;
use crate::spec::{FlowSpec, Located};
use crate::step::Services;
use crate::validate;
use eip_core::message::Message;

pub use self::adapter::AdapterBuilder;
pub use self::channel::{ChannelBuilder, Redelivery};
pub use self::exchange::ExchangeBuilder;
pub use self::join::{JoinBuilder, JoinFrom};
pub use self::route::{Choice, RouteBuilder};
pub use self::step::StepBuilder;
pub use self::store::StoreBuilder;

/// The name a flow made in code has in its [`FlowErrors`].
pub const FLOW_NAME: &str = "<flow>";

/// A flow under construction: channels, routes, joins and exchanges in the order added, as the
/// top-level keys of a flow file would hold them.
///
/// ```
/// use eip_dsl::builder::{FlowBuilder, channel, route};
///
/// let errors = FlowBuilder::new()
///     .channel("orders", channel::point_to_point())
///     .channel("shipped", channel::point_to_point())
///     .route(route::from("orders").to("shiped"))
///     .plan(".")
///     .unwrap_err();
/// let problem = &errors.problems[0];
/// assert_eq!(problem.message, "unknown channel or exchange `shiped`");
/// assert_eq!(problem.key.as_deref(), Some("routes[0].to[0]"));
/// assert_eq!(problem.help.as_deref(), Some("did you mean `shipped`?"));
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct FlowBuilder {
    spec: FlowSpec,
    /// The program's services, which `process` steps name.
    services: Services,
}

impl FlowBuilder {
    /// An empty flow.
    pub fn new() -> Self {
        FlowBuilder::default()
    }

    /// `channels: {NAME: ...}`: declares the channel `name`.
    pub fn channel(mut self, name: impl Into<String>, channel: ChannelBuilder) -> Self {
        self.spec
            .channels
            .push((Located::new(name.into()), channel.into_spec()));
        self
    }

    /// `routes: [...]`: adds a route (a [`RouteBuilder`], or a route with a
    /// [`Choice`]).
    pub fn route(mut self, route: impl Into<RouteBuilder>) -> Self {
        self.spec.routes.push(route.into().into_spec());
        self
    }

    /// `joins: [...]`: adds a join.
    pub fn join(mut self, join: JoinBuilder) -> Self {
        self.spec.joins.push(join.into_spec());
        self
    }

    /// `exchanges: {NAME: ...}`: declares the exchange `name`.
    pub fn exchange(mut self, name: impl Into<String>, exchange: ExchangeBuilder) -> Self {
        self.spec
            .exchanges
            .push((Located::new(name.into()), exchange.into_spec()));
        self
    }

    /// `adapters: {NAME: ...}`: declares the channel adapter `name` (a [`adapter::kind`]
    /// entry: `file-in`, `http-out`, `timer`, ...), checked like one in a file.
    pub fn adapter(mut self, name: impl Into<String>, adapter: AdapterBuilder) -> Self {
        self.spec
            .adapters
            .push((Located::new(name.into()), adapter.into_spec()));
        self
    }

    /// `bridges: {NAME: ...}`: declares the messaging bridge `name` (`rabbitmq-in`,
    /// `nats-out`, ...), checked like one in a file.
    pub fn bridge(mut self, name: impl Into<String>, bridge: AdapterBuilder) -> Self {
        self.spec
            .bridges
            .push((Located::new(name.into()), bridge.into_spec()));
        self
    }

    /// Offers the flow the program's `service` under `name`: a `process: NAME` step (or
    /// [`RouteBuilder::process`]) hands it each message, and what it answers goes on (the
    /// Service Activator; see [`Services`]).
    pub fn service<S>(mut self, name: impl Into<String>, service: S) -> Self
    where
        S: tower::Service<Message, Response = Message> + Clone + Send + 'static,
        S::Error: Into<tower::BoxError>,
        S::Future: Send + 'static,
    {
        self.services = self.services.add(name, service);
        self
    }

    /// `store: {...}`: where the flow's [durable](ChannelBuilder::durable) channels keep
    /// their messages. Called again, the last store wins, as a file holds one `store:`.
    pub fn store(mut self, store: StoreBuilder) -> Self {
        self.spec.store = Some(store.into_spec());
        self
    }

    /// `history: true`: Message History. Every channel, route and route step of the flow adds
    /// itself to the `history` header of each message it handles (see
    /// [`eip_core::message::history`]).
    pub fn message_history(mut self, on: bool) -> Self {
        self.spec.history = Some(Located::new(on));
        self
    }

    /// The flow as written: the [`FlowSpec`] a flow file with the same keys is read into,
    /// with no positions.
    pub fn spec(&self) -> &FlowSpec {
        &self.spec
    }

    /// The same, taken out of the builder.
    pub fn into_spec(self) -> FlowSpec {
        self.spec
    }

    /// Validates the flow: the plan, or every problem, as for a file. Schema files named by
    /// [`datatype`](ChannelBuilder::datatype) are read relative to `base_dir`.
    ///
    /// The problems have no file positions (the flow has no file) but keep their key paths
    /// (`routes[0].choice[1].when`) and help. A problem inside a predicate or topic pattern
    /// still says where: the errors' [`source`](FlowErrors::source) is then a listing of the
    /// flow's predicates and patterns, one a line, and the problem's position points into it,
    /// so [`FlowErrors::render`] shows the expression with a marker under the place at fault.
    ///
    /// ```
    /// use eip_dsl::builder::{FlowBuilder, channel, route};
    ///
    /// let errors = FlowBuilder::new()
    ///     .channel("orders", channel::point_to_point())
    ///     .channel("billing", channel::point_to_point())
    ///     .route(route::from("orders").filter("$.total = 0").to("billing"))
    ///     .plan(".")
    ///     .unwrap_err();
    /// let text = errors.render();
    /// assert!(text.contains("error: invalid predicate"), "{text}");
    /// assert!(text.contains("1 | $.total = 0\n  |         ^\n"), "{text}");
    /// assert!(text.contains("= key: routes[0].filter"), "{text}");
    /// ```
    pub fn plan(&self, base_dir: impl AsRef<Path>) -> Result<Plan, FlowErrors> {
        let mut spec = self.spec.clone();
        let listing = listing::place_expressions(&mut spec);
        validate::validate_with_services(&spec, base_dir.as_ref(), &self.services).map_err(
            |problems| {
                let placed = problems.iter().any(|p| p.at.is_some());
                FlowErrors::new(FLOW_NAME, placed.then_some(listing), problems)
            },
        )
    }

    /// Validates and compiles the flow, ready to [start](compile::Flow::start) or to
    /// [dry-run](compile::Flow::dry_run).
    pub fn compile(&self, base_dir: impl AsRef<Path>) -> Result<compile::Flow, BuildError> {
        let plan = self.plan(base_dir)?;
        Ok(compile::compile(&plan)?)
    }
}

impl From<FlowBuilder> for FlowSpec {
    fn from(flow: FlowBuilder) -> Self {
        flow.spec
    }
}

/// Why [`FlowBuilder::compile`] gave no flow.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The flow did not validate: every problem found.
    #[error(transparent)]
    Invalid(#[from] FlowErrors),
    /// The plan did not compile (validation rules this out; seeing one is a bug to report).
    #[error(transparent)]
    Compile(#[from] CompileError),
}
