//! Content-Based Router: the first `when` clause whose predicate matches picks the target (a
//! channel or an exchange).
//!
//! Clauses are tried in the order they were added; the first match wins and later clauses are
//! not evaluated. No match goes to `otherwise`; with no `otherwise` either, the message goes to
//! the router's [`DeadLetterChannel`] with reason `no-route`, the router's name as the death
//! record's channel (name the router after the channel it consumes, and a
//! [replay](crate::bus::MessageBus::replay) routes the message again). A router with neither
//! `otherwise` nor a dead letter channel does not build.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use super::BoxFuture;
use super::error::{RouteError, RouterError};
use super::target::{Sent, Target};
use crate::channel::DeadLetterChannel;
use crate::message::{DeathReason, Demand, Message, Reading};
use crate::predicate::Predicate;

/// Routes each message to the target of the first `when` clause that matches it.
///
/// ```
/// use eip_core::{Message, channel::PointToPoint, predicate::Predicate};
/// use eip_core::router::{ContentBasedRouter, Decision};
///
/// let big = PointToPoint::new("orders.big", 10).unwrap();
/// let small = PointToPoint::new("orders.small", 10).unwrap();
/// let router = ContentBasedRouter::builder("orders")
///     .when(Predicate::parse("$.total > 1000").unwrap(), big)
///     .otherwise(small)
///     .build()
///     .unwrap();
/// let decision = router.select(&Message::new(r#"{"total": 5000}"#));
/// assert!(matches!(decision, Decision::When { index: 0, .. }));
/// assert_eq!(decision.target().map(|t| t.name()), Some("orders.big"));
/// ```
#[derive(Clone)]
pub struct ContentBasedRouter {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    clauses: Vec<WhenClause>,
    /// What the clauses together read of a payload: each message is read once for all.
    demand: Demand,
    fallback: Fallback,
    when_counts: Vec<AtomicU64>,
    otherwise_count: AtomicU64,
    dead_lettered: AtomicU64,
}

/// Where a message no clause matches goes.
enum Fallback {
    Otherwise(Target),
    DeadLetters(DeadLetterChannel),
}

/// One `when` clause: a predicate and the target it routes to.
#[derive(Debug, Clone)]
pub struct WhenClause {
    predicate: Predicate,
    target: Target,
}

impl WhenClause {
    /// The predicate.
    pub fn predicate(&self) -> &Predicate {
        &self.predicate
    }

    /// The channel or exchange a match goes to.
    pub fn target(&self) -> &Target {
        &self.target
    }
}

/// Where a router would send a message.
#[derive(Debug, Clone, Copy)]
pub enum Decision<'a> {
    /// The `when` clause at `index` (counting from 0, in the order added) matched first.
    When {
        /// The clause's position.
        index: usize,
        /// Its target.
        target: &'a Target,
    },
    /// No clause matched; the `otherwise` target takes it.
    Otherwise {
        /// The `otherwise` target.
        target: &'a Target,
    },
    /// No clause matched and there is no `otherwise`: the dead letter channel takes it.
    NoRoute,
}

impl<'a> Decision<'a> {
    /// The target chosen, if any.
    pub fn target(&self) -> Option<&'a Target> {
        match *self {
            Decision::When { target, .. } | Decision::Otherwise { target } => Some(target),
            Decision::NoRoute => None,
        }
    }
}

/// What a router did with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// Sent to the target of the `when` clause at `index`.
    When {
        /// The clause's position.
        index: usize,
        /// What the target did with it.
        sent: Sent,
    },
    /// Sent to the `otherwise` target.
    Otherwise {
        /// What the target did with it.
        sent: Sent,
    },
    /// Put on the dead letter channel with reason `no-route`.
    DeadLettered,
}

/// A router's counters since it was built (shared by its clones).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouterStats {
    /// Messages sent through each `when` clause, in clause order.
    pub when: Vec<u64>,
    /// Messages sent to `otherwise`.
    pub otherwise: u64,
    /// Messages dead-lettered with reason `no-route`.
    pub dead_lettered: u64,
}

/// Builds a [`ContentBasedRouter`].
#[derive(Debug)]
#[must_use]
pub struct ContentBasedRouterBuilder {
    name: String,
    clauses: Vec<WhenClause>,
    otherwise: Option<Target>,
    dead_letters: Option<DeadLetterChannel>,
}

impl ContentBasedRouterBuilder {
    /// Adds a clause: messages `predicate` matches (and no earlier clause did) go to `target`,
    /// a channel or an exchange.
    pub fn when(mut self, predicate: Predicate, target: impl Into<Target>) -> Self {
        self.clauses.push(WhenClause {
            predicate,
            target: target.into(),
        });
        self
    }

    /// Where messages no clause matches go.
    pub fn otherwise(mut self, target: impl Into<Target>) -> Self {
        self.otherwise = Some(target.into());
        self
    }

    /// Where messages go, with reason `no-route`, when no clause matches and there is no
    /// `otherwise` (with an `otherwise`, it is never used).
    pub fn dead_letter_channel(mut self, channel: DeadLetterChannel) -> Self {
        self.dead_letters = Some(channel);
        self
    }

    /// The router, or why it can not work: no `when` clause, or no `otherwise` and no dead
    /// letter channel.
    pub fn build(self) -> Result<ContentBasedRouter, RouterError> {
        if self.clauses.is_empty() {
            return Err(RouterError::NoClauses { router: self.name });
        }
        let fallback = match (self.otherwise, self.dead_letters) {
            (Some(target), _) => Fallback::Otherwise(target),
            (None, Some(dead_letters)) => Fallback::DeadLetters(dead_letters),
            (None, None) => return Err(RouterError::Unroutable { router: self.name }),
        };
        Ok(ContentBasedRouter {
            inner: Arc::new(Inner {
                when_counts: self.clauses.iter().map(|_| AtomicU64::new(0)).collect(),
                demand: self
                    .clauses
                    .iter()
                    .fold(Demand::nothing(), |demand, clause| {
                        demand.union(clause.predicate.demand())
                    }),
                name: self.name,
                clauses: self.clauses,
                fallback,
                otherwise_count: AtomicU64::new(0),
                dead_lettered: AtomicU64::new(0),
            }),
        })
    }
}

impl ContentBasedRouter {
    /// A builder for a router named `name` (the channel it consumes, ideally: see the module
    /// documentation).
    pub fn builder(name: &str) -> ContentBasedRouterBuilder {
        ContentBasedRouterBuilder {
            name: name.to_owned(),
            clauses: Vec::new(),
            otherwise: None,
            dead_letters: None,
        }
    }

    /// The router's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The `when` clauses, in order.
    pub fn clauses(&self) -> &[WhenClause] {
        &self.inner.clauses
    }

    /// The `otherwise` target, if any.
    pub fn otherwise(&self) -> Option<&Target> {
        match &self.inner.fallback {
            Fallback::Otherwise(target) => Some(target),
            Fallback::DeadLetters(_) => None,
        }
    }

    /// The dead letter channel unmatched messages go to (there is one exactly when there is no
    /// `otherwise`).
    pub fn dead_letter_channel(&self) -> Option<&DeadLetterChannel> {
        match &self.inner.fallback {
            Fallback::Otherwise(_) => None,
            Fallback::DeadLetters(dead_letters) => Some(dead_letters),
        }
    }

    /// Where `msg` would go. Pure: sends nothing and counts nothing. The payload is read once,
    /// when the first clause reading it is evaluated, and only as far as the clauses' paths go
    /// (see [`Predicate`]'s lazy reading).
    pub fn select(&self, msg: &Message) -> Decision<'_> {
        let inner = &*self.inner;
        let reading = Reading::new(msg, &inner.demand);
        for (index, clause) in inner.clauses.iter().enumerate() {
            if clause.predicate.matches_in(&reading) {
                return Decision::When {
                    index,
                    target: &clause.target,
                };
            }
        }
        match &inner.fallback {
            Fallback::Otherwise(target) => Decision::Otherwise { target },
            Fallback::DeadLetters(_) => Decision::NoRoute,
        }
    }

    /// Routes `msg`: sends it to the chosen target (waiting for room), or dead-letters it.
    /// Completes when the target has accepted it.
    pub async fn route(&self, msg: Message) -> Result<Routed, RouteError> {
        let inner = &*self.inner;
        let decision = self.select(&msg);
        match (decision, &inner.fallback) {
            (Decision::When { index, target }, _) => {
                let sent = target.send(msg).await?;
                if let Some(count) = inner.when_counts.get(index) {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Routed::When { index, sent })
            }
            (Decision::Otherwise { target }, _) | (_, Fallback::Otherwise(target)) => {
                let sent = target.send(msg).await?;
                inner.otherwise_count.fetch_add(1, Ordering::Relaxed);
                Ok(Routed::Otherwise { sent })
            }
            (Decision::NoRoute, Fallback::DeadLetters(dead_letters)) => {
                let error = format!(
                    "no `when` clause of router `{}` matched and it has no `otherwise`",
                    inner.name
                );
                dead_letters
                    .bury(msg, &inner.name, DeathReason::NoRoute, Some(error))
                    .await
                    .map_err(|message| RouteError::DeadLetterClosed {
                        channel: dead_letters.name().to_owned(),
                        message: Box::new(message),
                    })?;
                inner.dead_lettered.fetch_add(1, Ordering::Relaxed);
                Ok(Routed::DeadLettered)
            }
        }
    }

    /// The counters since the router was built.
    pub fn stats(&self) -> RouterStats {
        let inner = &*self.inner;
        RouterStats {
            when: inner
                .when_counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
            otherwise: inner.otherwise_count.load(Ordering::Relaxed),
            dead_lettered: inner.dead_lettered.load(Ordering::Relaxed),
        }
    }
}

impl std::fmt::Debug for ContentBasedRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("ContentBasedRouter")
            .field("name", &inner.name)
            .field("clauses", &inner.clauses)
            .field("otherwise", &self.otherwise().map(Target::name))
            .field(
                "dead_letters",
                &self.dead_letter_channel().map(|d| d.name()),
            )
            .finish()
    }
}

/// Always ready: backpressure comes from the chosen channel, inside the call's future.
impl tower::Service<Message> for ContentBasedRouter {
    type Response = Routed;
    type Error = RouteError;
    type Future = BoxFuture<Result<Routed, RouteError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), RouteError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let router = self.clone();
        Box::pin(async move { router.route(msg).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::PointToPoint;

    #[test]
    fn later_clauses_are_not_evaluated_once_one_matches() {
        let a = PointToPoint::new("a", 1).unwrap();
        let router = ContentBasedRouter::builder("in")
            .when(Predicate::parse("true").unwrap(), a.clone())
            .when(Predicate::parse("exists($.x)").unwrap(), a)
            .dead_letter_channel(DeadLetterChannel::new("dl", 1).unwrap())
            .build()
            .unwrap();
        let msg = Message::new(r#"{"x": 1}"#);
        assert!(matches!(
            router.select(&msg),
            Decision::When { index: 0, .. }
        ));
        assert!(!msg.is_json_parsed(), "the JSON clause never ran");
        assert_eq!(router.clauses().len(), 2);
        assert_eq!(router.clauses()[1].predicate().as_str(), "exists($.x)");
        assert!(router.otherwise().is_none());
        assert_eq!(router.dead_letter_channel().map(|d| d.name()), Some("dl"));
    }
}
