//! A binding: a key (topic pattern) and the channels that get what it matches.

use std::collections::HashSet;
use std::fmt;

use super::ExchangeError;
use crate::channel::Channel;
use crate::topic::TopicPattern;

/// Identifies a binding on its exchange; ids are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BindingId(pub(super) u64);

impl fmt::Display for BindingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A key and one or more targets: a message whose subject matches the key goes to every target.
///
/// A binding without a key matches every message the exchange can route (like the key `#`).
/// Targets are channels, known by name: the same name given twice is one target.
///
/// ```
/// use eip_core::channel::{Channel, PointToPoint, PublishSubscribe};
/// use eip_core::topic::{Binding, ExchangeError};
///
/// let nyse = PointToPoint::new("trades.nyse", 100)?;
/// let audit = PublishSubscribe::new("audit", 100)?;
/// let binding = Binding::new("stock.*.nyse", [Channel::from(nyse), audit.clone().into()])?;
/// assert_eq!(binding.key().map(|k| k.as_str()), Some("stock.*.nyse"));
/// assert_eq!(binding.targets().len(), 2);
/// assert!(binding.matches("stock.ibm.nyse"));
///
/// let refused = Binding::new("stock.ny*", [audit]);
/// assert!(matches!(refused, Err(ExchangeError::Pattern(_))));
/// let empty = Binding::new("stock.#", Vec::<Channel>::new());
/// assert!(matches!(empty, Err(ExchangeError::NoTarget { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Binding {
    key: Option<TopicPattern>,
    targets: Vec<Channel>,
}

impl Binding {
    /// A binding of `pattern` to `targets` (at least one).
    pub fn new<C: Into<Channel>>(
        pattern: &str,
        targets: impl IntoIterator<Item = C>,
    ) -> Result<Self, ExchangeError> {
        Binding::with_key(Some(TopicPattern::parse(pattern)?), targets)
    }

    /// A binding of a parsed key, or of no key (`None`, matching every routable message), to
    /// `targets` (at least one).
    pub fn with_key<C: Into<Channel>>(
        key: Option<TopicPattern>,
        targets: impl IntoIterator<Item = C>,
    ) -> Result<Self, ExchangeError> {
        let mut seen = HashSet::new();
        let targets: Vec<Channel> = targets
            .into_iter()
            .map(Into::into)
            .filter(|c: &Channel| seen.insert(c.name().to_owned()))
            .collect();
        if targets.is_empty() {
            return Err(ExchangeError::NoTarget {
                key: key
                    .as_ref()
                    .map_or_else(|| "(no key)".to_owned(), |k| k.as_str().to_owned()),
            });
        }
        Ok(Binding { key, targets })
    }

    /// The key, or `None` for a binding that matches everything.
    pub fn key(&self) -> Option<&TopicPattern> {
        self.key.as_ref()
    }

    /// The targets, each once, in the order given.
    pub fn targets(&self) -> &[Channel] {
        &self.targets
    }

    /// Whether this binding alone matches `subject` (subjects over 255 bytes match nothing).
    pub fn matches(&self, subject: &str) -> bool {
        match &self.key {
            Some(key) => key.matches(subject),
            None => subject.len() <= crate::topic::MAX_TOPIC_LEN,
        }
    }
}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Binding")
            .field("key", &self.key.as_ref().map(TopicPattern::as_str))
            .field(
                "targets",
                &self.targets.iter().map(Channel::name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Changes to an exchange's bindings, applied together by
/// [`TopicExchange::update`](super::TopicExchange::update): no message sees some of them
/// without the others.
#[derive(Debug, Default)]
#[must_use]
pub struct BindingChanges {
    pub(super) changes: Vec<Change>,
}

#[derive(Debug)]
pub(super) enum Change {
    Bind(Binding),
    Unbind(BindingId),
    Alternate(Option<Channel>),
}

impl BindingChanges {
    /// No changes yet.
    pub fn new() -> Self {
        BindingChanges::default()
    }

    /// Adds a binding; its id is in the result of `update`, in the order of the `bind` calls.
    pub fn bind(mut self, binding: Binding) -> Self {
        self.changes.push(Change::Bind(binding));
        self
    }

    /// Removes a binding that is on the exchange now.
    pub fn unbind(mut self, id: BindingId) -> Self {
        self.changes.push(Change::Unbind(id));
        self
    }

    /// Sets (or, with `None`, removes) the alternate target.
    pub fn alternate(mut self, channel: Option<Channel>) -> Self {
        self.changes.push(Change::Alternate(channel));
        self
    }

    /// Whether there is nothing to change.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}
