//! Selective Consumer: a consumer that takes only the messages its selector accepts.
//!
//! A [`Selector`] is a predicate over a message, usually over its headers. A receiver made with a
//! selector skips the messages it does not accept; they stay on the channel, in order, for
//! another consumer. A message that no consumer selects is never lost but also never delivered by
//! itself: it waits on the channel, taking up capacity, until a consumer that selects it attaches,
//! a [purge](super::ChannelPurger) removes it, or its expiration passes (then it is dead-lettered
//! when a consumer next looks at it). Attach a catch-all consumer, or give such messages an
//! expiration, when that matters.

use std::fmt;
use std::sync::Arc;

use crate::message::{HeaderValue, Message};

/// A predicate choosing which messages a consumer takes (or a purge removes).
#[derive(Clone)]
pub struct Selector {
    test: Arc<dyn Fn(&Message) -> bool + Send + Sync>,
    description: Arc<str>,
}

impl Selector {
    /// A selector from any predicate over the message.
    pub fn new(
        description: impl Into<String>,
        test: impl Fn(&Message) -> bool + Send + Sync + 'static,
    ) -> Self {
        Selector {
            test: Arc::new(test),
            description: description.into().into(),
        }
    }

    /// Accepts messages whose header `name` equals `value`.
    pub fn header_equals(name: &str, value: impl Into<HeaderValue>) -> Self {
        let name = name.to_owned();
        let value = value.into();
        let description = format!("{name} == {value}");
        Selector::new(description, move |m| m.headers().get(&name) == Some(&value))
    }

    /// Accepts messages that have header `name`.
    pub fn header_exists(name: &str) -> Self {
        let name = name.to_owned();
        let description = format!("exists({name})");
        Selector::new(description, move |m| m.headers().contains(&name))
    }

    /// Accepts every message.
    pub fn all() -> Self {
        Selector::new("true", |_| true)
    }

    /// Accepts what both accept.
    pub fn and(self, other: Selector) -> Self {
        let description = format!("({}) and ({})", self.description, other.description);
        Selector::new(description, move |m| self.matches(m) && other.matches(m))
    }

    /// Accepts what either accepts.
    pub fn or(self, other: Selector) -> Self {
        let description = format!("({}) or ({})", self.description, other.description);
        Selector::new(description, move |m| self.matches(m) || other.matches(m))
    }

    /// Accepts what this one refuses.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Self {
        let description = format!("not ({})", self.description);
        Selector::new(description, move |m| !self.matches(m))
    }

    /// Whether the selector accepts `message`.
    pub fn matches(&self, message: &Message) -> bool {
        (self.test)(message)
    }

    /// What it selects, in a few words (a predicate's expression, for one made of a
    /// predicate).
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl fmt::Debug for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Selector({})", self.description)
    }
}

impl crate::store::Select for Selector {
    fn selects(&self, msg: &Message) -> bool {
        self.matches(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_combine() {
        let m = Message::builder("x")
            .header("type", "order")
            .header("region", "eu")
            .build();
        let order = Selector::header_equals("type", "order");
        let us = Selector::header_equals("region", "us");
        assert!(order.matches(&m));
        assert!(!us.matches(&m));
        assert!(!order.clone().and(us.clone()).matches(&m));
        assert!(order.clone().or(us.clone()).matches(&m));
        assert!(us.clone().not().matches(&m));
        assert!(Selector::header_exists("region").matches(&m));
        assert!(!Selector::header_exists("nope").matches(&m));
        assert_eq!(
            format!("{:?}", order.and(us)),
            "Selector((type == order) and (region == us))"
        );
    }
}
