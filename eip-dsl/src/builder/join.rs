//! Joins: [`from`] a publish-subscribe channel [`to`](JoinFrom::to) another channel,
//! optionally filtered, with a hop count, or archival.
//!
//! A join needs both ends, so [`from`] gives a [`JoinFrom`] whose only method is `to`; the
//! rest are the keys of a join entry.
//!
//! ```
//! use eip_dsl::builder::join;
//!
//! // joins: - {from: quotes, to: quotes.nyse, filter: '$.exchange == "NYSE"', hops: 5}
//! let nyse = join::from("quotes").to("quotes.nyse").filter(r#"$.exchange == "NYSE""#).hops(5);
//! // joins: - {from: quotes, to: quotes.archive, archival: true}
//! let archive = join::from("quotes").to("quotes.archive").archival();
//! # let _ = (nyse, archive);
//! ```

use crate::spec::{JoinSpec, Located, Number};

/// A join from the publish-subscribe channel `channel` (`from:`); name where it goes with
/// [`to`](JoinFrom::to).
pub fn from(channel: impl Into<String>) -> JoinFrom {
    JoinFrom {
        from: channel.into(),
    }
}

/// The source of a join, waiting for its destination. Made by [`from`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct JoinFrom {
    from: String,
}

impl JoinFrom {
    /// `to:` the channel every message crosses to.
    pub fn to(self, channel: impl Into<String>) -> JoinBuilder {
        JoinBuilder {
            spec: JoinSpec {
                at: None,
                from: Located::new(self.from),
                to: Located::new(channel.into()),
                filter: None,
                hops: None,
                archival: None,
            },
        }
    }
}

/// One join of a flow, as an entry under `joins:` would declare it. Made by
/// [`from`]`(..).`[`to`](JoinFrom::to)`(..)`; added with
/// [`FlowBuilder::join`](super::FlowBuilder::join).
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct JoinBuilder {
    spec: JoinSpec,
}

impl JoinBuilder {
    /// `filter:` a predicate; only matching messages cross.
    pub fn filter(mut self, predicate: impl Into<String>) -> Self {
        self.spec.filter = Some(Located::new(predicate.into()));
        self
    }

    /// `hops:` how many more stores a message that crossed may make through further joins
    /// (default 10; 0 means "to the destination and no further").
    pub fn hops(mut self, hops: u32) -> Self {
        self.spec.hops = Some(Located::new(Number::Integer(i64::from(hops))));
        self
    }

    /// `archival: true`: the join skips the duplicate check at its destination, so a queue fed
    /// by several archival joins keeps every copy that reaches it. The destination must be a
    /// point-to-point channel.
    pub fn archival(mut self) -> Self {
        self.spec.archival = Some(Located::new(true));
        self
    }

    /// The join's entry as plain data.
    pub fn into_spec(self) -> JoinSpec {
        self.spec
    }
}
