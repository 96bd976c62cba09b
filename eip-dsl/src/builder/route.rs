//! Routes: [`from`] a channel, optionally filtered and tapped, then sent on by `to`, a
//! [`choice`](RouteBuilder::choice) of `when` clauses, or a recipient list.
//!
//! The methods are the keys of a route entry, in the order a route reads: `name`, `from`,
//! `filter`, `discard`, `wire-tap`, then how it sends. Predicates are strings, parsed by
//! validation like a file's (the problem for a bad one points inside it).
//!
//! ```
//! use eip_dsl::builder::route;
//!
//! // routes: - {from: orders, filter: '$.total > 0', discard: orders.rejected, to: [billing, audit]}
//! let billing = route::from("orders")
//!     .filter("$.total > 0")
//!     .discard("orders.rejected")
//!     .to("billing")
//!     .to("audit");
//!
//! // routes: - {name: by-side, from: trades, choice: [...], otherwise: trades.other}
//! let by_side = route::from("trades")
//!     .name("by-side")
//!     .choice()
//!     .when(r#"$.side == "buy""#, "trades.buy")
//!     .when(r#"$.side == "sell""#, "trades.sell")
//!     .otherwise("trades.other");
//! # let _ = (billing, by_side);
//! ```

use super::StepBuilder;
use eip_core::router::Strategy;

use crate::spec::{
    LoadBalanceSpec, Located, Number, RecipientsSpec, RouteSpec, SettingValue, WhenSpec,
};

/// A route consuming the channel `channel` (`from:`).
pub fn from(channel: impl Into<String>) -> RouteBuilder {
    RouteBuilder {
        spec: RouteSpec::new(Located::new(channel.into()), None),
    }
}

/// One route of a flow, as an entry under `routes:` would declare it. Made by [`from`]; added
/// with [`FlowBuilder::route`](super::FlowBuilder::route).
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct RouteBuilder {
    spec: RouteSpec,
}

impl RouteBuilder {
    /// `name:` the route's name in counters and errors (default `route-N`, N counting routes
    /// from 1 in the order added).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.spec.name = Some(Located::new(name.into()));
        self
    }

    /// `filter:` a predicate; messages that do not match go no further (they are counted, or
    /// sent to [`discard`](Self::discard)).
    pub fn filter(mut self, predicate: impl Into<String>) -> Self {
        self.spec.filter = Some(Located::new(predicate.into()));
        self
    }

    /// `discard:` the channel that takes the messages the [`filter`](Self::filter) drops.
    pub fn discard(mut self, channel: impl Into<String>) -> Self {
        self.spec.discard = Some(Located::new(channel.into()));
        self
    }

    /// `wire-tap:` a channel that gets a copy of every message the route takes, waiting for
    /// room when it is full (the route's first step; a `wire-tap` [step](Self::step) can drop
    /// copies instead).
    pub fn wire_tap(mut self, channel: impl Into<String>) -> Self {
        self.spec.wire_tap = Some(Located::new(channel.into()));
        self
    }

    /// `- KIND: ...` under `steps:`: the next step the route runs each message through,
    /// after the [`wire_tap`](Self::wire_tap) and [`filter`](Self::filter) shorthands.
    pub fn step(mut self, step: StepBuilder) -> Self {
        self.spec.steps.push(step.into_spec());
        self
    }

    /// `- transform: PROGRAM`: the next step makes the payload what the jq program `program`
    /// makes of it (the Message Translator; see [`step`](super::step) for its other keys).
    pub fn transform(self, program: impl Into<String>) -> Self {
        self.step(super::step::kind("transform").value(program.into()))
    }

    /// `- process: NAME`: the next step hands each message to the program's service `name`
    /// (registered with [`FlowBuilder::service`](super::FlowBuilder::service)), and what it
    /// answers goes on.
    pub fn process(self, service: impl Into<String>) -> Self {
        self.step(super::step::kind("process").value(service.into()))
    }

    /// `to:` a channel or exchange that gets every message. Called again, it adds a target:
    /// each gets a copy (`to: [a, b]`).
    pub fn to(mut self, target: impl Into<String>) -> Self {
        let target = Located::new(target.into());
        match &mut self.spec.to {
            Some(list) => list.value.push(target),
            None => self.spec.to = Some(Located::new(vec![target])),
        }
        self
    }

    /// `recipient-list:` a fixed list of channels or exchanges, each of which gets a copy.
    pub fn recipient_list<I>(mut self, targets: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let names = targets
            .into_iter()
            .map(|t| Located::new(t.into()))
            .collect();
        self.spec.recipient_list = Some(Located::new(RecipientsSpec::Fixed(names)));
        self
    }

    /// `recipient-list: {header: NAME}`: each message's header `header` holds the
    /// comma-separated names of its recipients.
    pub fn recipient_list_header(mut self, header: impl Into<String>) -> Self {
        let header = Located::new(header.into());
        self.spec.recipient_list = Some(Located::new(RecipientsSpec::Header(header)));
        self
    }

    /// `load-balance: {to: TARGETS, strategy: STRATEGY}`: each message goes to one of the
    /// channels or exchanges `targets`, picked in turn (round robin) or the first open one in
    /// order (failover).
    pub fn load_balance<I>(mut self, targets: I, strategy: Strategy) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let to = targets
            .into_iter()
            .map(|t| Located::new(t.into()))
            .collect();
        let strategy = Located::new(strategy.name().to_owned());
        self.spec.load_balance = Some(Located::new(LoadBalanceSpec {
            to: Located::new(to),
            strategy: Some(strategy),
        }));
        self
    }

    /// `on-error: CHANNEL`: a message whose step failed (a service's error) goes to the
    /// channel `channel` once the redelivery policy of the channel the route consumes is used
    /// up, with a death record, instead of the dead letter channel. Other failures (no route,
    /// a deleted target) still go to the dead letter channel.
    ///
    /// ```
    /// use eip_dsl::builder::route;
    ///
    /// // routes: - {from: orders, steps: [process: pricing], to: priced, on-error: orders.failed}
    /// let price = route::from("orders")
    ///     .process("pricing")
    ///     .to("priced")
    ///     .on_error("orders.failed");
    /// # let _ = price;
    /// ```
    pub fn on_error(mut self, channel: impl Into<String>) -> Self {
        self.spec.on_error = Some(Located::new(SettingValue::Text(channel.into())));
        self
    }

    /// `concurrency: N`: the route processes up to `n` messages at once instead of one at a
    /// time; their order downstream is then not kept. Validation refuses 0, more than
    /// [`MAX_CONCURRENCY`](crate::plan::MAX_CONCURRENCY), and more than 1 on a route with an
    /// `aggregate` or `resequence` step.
    ///
    /// ```
    /// use eip_dsl::builder::route;
    ///
    /// // routes: - {from: orders, steps: [process: pricing], to: priced, concurrency: 8}
    /// let price = route::from("orders")
    ///     .process("pricing")
    ///     .to("priced")
    ///     .concurrency(8);
    /// # let _ = price;
    /// ```
    pub fn concurrency(mut self, n: u64) -> Self {
        let n = i64::try_from(n).map_or(Number::Float(n as f64), Number::Integer);
        self.spec.concurrency = Some(Located::new(n));
        self
    }

    /// `choice:` the route becomes a content-based router: [`when`](Choice::when) clauses,
    /// tried in order, and an optional [`otherwise`](Choice::otherwise).
    pub fn choice(mut self) -> Choice {
        if self.spec.choice.is_none() {
            self.spec.choice = Some(Located::new(Vec::new()));
        }
        Choice { route: self }
    }

    /// The route's entry as plain data.
    pub fn into_spec(self) -> RouteSpec {
        self.spec
    }
}

/// The `choice:` of a route: `when` clauses in order, and `otherwise`. Made by
/// [`RouteBuilder::choice`]; it is a route, added with
/// [`FlowBuilder::route`](super::FlowBuilder::route) like any other.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Choice {
    route: RouteBuilder,
}

impl Choice {
    /// `- {when: PREDICATE, to: TARGET}`: a message that matches `predicate` (and no clause
    /// before) goes to the channel or exchange `target`.
    pub fn when(mut self, predicate: impl Into<String>, target: impl Into<String>) -> Self {
        let clause = WhenSpec {
            at: None,
            when: Located::new(predicate.into()),
            to: Located::new(target.into()),
        };
        match &mut self.route.spec.choice {
            Some(clauses) => clauses.value.push(clause),
            None => self.route.spec.choice = Some(Located::new(vec![clause])),
        }
        self
    }

    /// `otherwise:` where a message that no clause matches goes. Without it, such a message
    /// is dead-lettered with reason `no-route`.
    pub fn otherwise(mut self, target: impl Into<String>) -> Self {
        self.route.spec.otherwise = Some(Located::new(target.into()));
        self
    }
}

impl From<Choice> for RouteBuilder {
    fn from(choice: Choice) -> Self {
        choice.route
    }
}
