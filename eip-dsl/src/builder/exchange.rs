//! Topic exchanges: [`topic`], with bindings from topic patterns to channels and an alternate
//! channel for what no binding matches.
//!
//! Patterns are strings, parsed by validation like a file's (`*` one word, `#` zero or more,
//! each as a whole word); the problem for a bad one points at the word at fault.
//!
//! ```
//! use eip_dsl::builder::exchange;
//!
//! // exchanges:
//! //   market:
//! //     alternate: unrouted
//! //     bindings:
//! //       - {key: "stock.*.nyse", to: [quotes.nyse]}
//! //       - {to: [everything]}
//! let market = exchange::topic()
//!     .alternate("unrouted")
//!     .bind("stock.*.nyse", ["quotes.nyse"])
//!     .bind_all(["everything"]);
//! # let _ = market;
//! ```

use crate::spec::{BindingSpec, ExchangeSpec, Located};

/// A topic exchange with no bindings yet.
pub fn topic() -> ExchangeBuilder {
    ExchangeBuilder {
        spec: ExchangeSpec::default(),
    }
}

/// One exchange of a flow, as an entry under `exchanges:` would declare it. Made by
/// [`topic`]; added with [`FlowBuilder::exchange`](super::FlowBuilder::exchange).
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct ExchangeBuilder {
    spec: ExchangeSpec,
}

impl ExchangeBuilder {
    /// `alternate:` the channel that takes messages no binding matches (without one, they
    /// are dropped and counted).
    pub fn alternate(mut self, channel: impl Into<String>) -> Self {
        self.spec.alternate = Some(Located::new(channel.into()));
        self
    }

    /// `- {key: PATTERN, to: [CHANNEL, ...]}`: messages whose subject matches `pattern` go to
    /// each of `channels`.
    pub fn bind<I>(self, pattern: impl Into<String>, channels: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.binding(Some(Located::new(pattern.into())), channels)
    }

    /// `- {to: [CHANNEL, ...]}`: a binding without a key, which matches every subject.
    pub fn bind_all<I>(self, channels: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.binding(None, channels)
    }

    fn binding<I>(mut self, key: Option<Located<String>>, channels: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let to = channels
            .into_iter()
            .map(|c| Located::new(c.into()))
            .collect();
        self.spec.bindings.push(BindingSpec {
            at: None,
            key,
            to: Located::new(to),
        });
        self
    }

    /// The exchange's entry as plain data.
    pub fn into_spec(self) -> ExchangeSpec {
        self.spec
    }
}
