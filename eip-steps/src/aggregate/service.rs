//! The aggregator as a `tower::Service`, and its layer.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use eip_core::message::{Message, MessageId};
use futures::future::{Either, Ready, ready};
use tower::{Layer, Service};

use super::config::{AggregatorBuilder, AggregatorConfig, Rule};
use super::dead_letter::{INCOMPLETE, INVALID};
use super::decision::Decision;
use super::error::AggregateError;
use super::group::{Group, GroupStore, InMemoryGroups};
use super::release::{aggregate, dead_letter, forget, give_up_and_forget};
use super::state::{Shared, Step};
use super::stats::{AggregatorStats, Counters};
use super::timer;

type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// The future of a call: ready at once when the message is only held.
pub type AggregateFuture<R, E> = Either<
    Ready<Result<Aggregated<R>, AggregateError<E>>>,
    BoxFuture<Result<Aggregated<R>, AggregateError<E>>>,
>;

/// What the aggregator did with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aggregated<R> {
    /// Held in its group (in memory, held counts as accepted).
    Held {
        /// How many messages its group holds now.
        count: usize,
    },
    /// It completed its group and the inner service accepted the aggregate.
    Released {
        /// The correlation key.
        group: Arc<str>,
        /// How many messages the aggregate holds.
        count: usize,
        /// The rule that completed the group.
        rule: Rule,
        /// The inner service's response.
        response: R,
    },
    /// It completed its group, which could not be combined or sent: the group went to the
    /// dead letters.
    DeadLettered {
        /// The correlation key.
        group: Arc<str>,
        /// How many messages went there.
        count: usize,
    },
    /// Its sequence number was in its group already: ignored.
    Duplicate {
        /// The correlation key.
        group: Arc<str>,
        /// The sequence number.
        number: u64,
    },
}

/// The Aggregator: collects correlated messages into groups and sends each complete group on
/// as one message (see the [module](super) for the rules).
pub struct Aggregator<S> {
    pub(super) inner: S,
    pub(super) shared: Arc<Shared>,
}

impl<S: Clone> Clone for Aggregator<S> {
    fn clone(&self) -> Self {
        Aggregator {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for Aggregator<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Aggregator")
            .field("inner", &self.inner)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Aggregator<()> {
    /// A builder of an aggregator's configuration.
    pub fn builder() -> AggregatorBuilder {
        AggregatorBuilder::default()
    }

    /// A layer that puts an aggregator in front of a service.
    pub fn layer(config: AggregatorConfig) -> AggregatorLayer {
        AggregatorLayer::new(config)
    }
}

impl<S> Aggregator<S> {
    /// An aggregator in front of `inner`, its groups in memory.
    pub fn new(inner: S, config: AggregatorConfig) -> Self {
        Aggregator::with_store(inner, config, InMemoryGroups::new())
    }

    /// An aggregator in front of `inner`, its groups in `store`.
    pub fn with_store(inner: S, config: AggregatorConfig, store: impl GroupStore) -> Self {
        Self::from_shared(inner, config, Box::new(store), Arc::default())
    }

    fn from_shared(
        inner: S,
        config: AggregatorConfig,
        store: Box<dyn GroupStore>,
        counters: Arc<Counters>,
    ) -> Self {
        Aggregator {
            inner,
            shared: Arc::new(Shared::new(config, store, counters)),
        }
    }

    /// What the aggregator would do with `msg`, changing nothing: the dry run.
    pub fn peek(&self, msg: &Message) -> Decision {
        self.shared.peek(msg)
    }

    /// The counters.
    pub fn stats(&self) -> AggregatorStats {
        self.shared.counters.snapshot()
    }

    /// Puts messages back into their groups after a restart, as a durable [`GroupStore`]
    /// read them back, each with the time its group opened (so its timeout still counts from
    /// then). Nothing is kept again and no group completes here: a message that completed
    /// its group was never kept as held, and comes again from its channel. Returns how many
    /// went back, and why each other one could not (its key no longer reads, say, after the
    /// configuration changed).
    pub fn restore(&self, held: Vec<(Message, tokio::time::Instant)>) -> (usize, Vec<String>)
    where
        S: Service<Message> + Clone + Send + 'static,
        S::Future: Send,
        S::Response: Send + 'static,
        S::Error: fmt::Display + Send + 'static,
    {
        let restored = self.shared.restore(held);
        // Restored groups time out even if no message comes.
        timer::ensure_started(&self.shared, &self.inner);
        restored
    }

    /// How many groups are open.
    pub fn open_groups(&self) -> usize {
        self.shared.open_groups()
    }

    /// The configuration.
    pub fn config(&self) -> &AggregatorConfig {
        &self.shared.config
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, for change.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<Message> for Aggregator<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    type Response = Aggregated<S::Response>;
    type Error = AggregateError<S::Error>;
    type Future = AggregateFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner
            .poll_ready(cx)
            .map_err(AggregateError::Unavailable)
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        timer::ensure_started(&self.shared, &self.inner);
        let counters = &self.shared.counters;
        let (key, sequence) = match self.shared.config.read(&msg) {
            Ok(read) => read,
            Err(reason) => return invalid(counters, msg, reason),
        };
        match self.shared.step(key.as_str(), sequence.part(msg)) {
            Step::Held {
                count,
                given_up,
                kept,
            } => {
                counters.held();
                let held = Ok(Aggregated::Held { count });
                match (given_up, kept) {
                    (None, None) => Either::Left(ready(held)),
                    (given_up, kept) => self.hold(key.as_str(), kept, given_up, held),
                }
            }
            Step::Completed { group, rule } => {
                counters.held();
                self.complete(*group, rule)
            }
            Step::Duplicate { group, number } => {
                counters.duplicate();
                Either::Left(ready(Ok(Aggregated::Duplicate { group, number })))
            }
            Step::Refused { open, message } => {
                counters.refused();
                Either::Left(ready(Err(AggregateError::Full { open, message })))
            }
            Step::Invalid { reason, message } => invalid(counters, *message, reason),
        }
    }
}

fn invalid<R, E>(counters: &Counters, message: Message, reason: String) -> AggregateFuture<R, E> {
    counters.invalid();
    Either::Left(ready(Err(AggregateError::Invalid {
        reason,
        message: Box::new(message),
    })))
}

impl<S> Aggregator<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: fmt::Display + Send + 'static,
{
    /// Waits for the store to keep the held message (`kept`), gives up the group `old`
    /// (overflow) on a clone of the inner service, then answers `held`.
    fn hold(
        &self,
        key: &str,
        kept: Option<crate::Keeping>,
        old: Option<Box<Group>>,
        held: Result<Aggregated<S::Response>, AggregateError<S::Error>>,
    ) -> AggregateFuture<S::Response, S::Error> {
        let shared = self.shared.clone();
        let inner = self.inner.clone();
        let group = key.to_owned();
        Either::Right(Box::pin(async move {
            if let Some(keeping) = kept {
                keeping
                    .await
                    .map_err(|error| AggregateError::Keep { group, error })?;
            }
            if let Some(old) = old {
                give_up_and_forget(&shared, *old, Rule::Overflow, inner).await;
            }
            held
        }))
    }

    /// Sends the aggregate of a completed group to the inner service (readiness was polled
    /// for this call); a group that does not combine or is refused goes to the dead letters.
    fn complete(&mut self, group: Group, rule: Rule) -> AggregateFuture<S::Response, S::Error> {
        let shared = self.shared.clone();
        let key = group.shared_key();
        let ids: Vec<MessageId> = group.messages().iter().map(Message::id).collect();
        let messages = group.into_ordered_messages();
        let count = messages.len();
        let sent = match aggregate(&shared.config, &key, &messages) {
            Ok(aggregate) => Ok(self.inner.call(aggregate)),
            Err(reason) => Err(reason),
        };
        Either::Right(Box::pin(async move {
            let config = &shared.config;
            let (reason, detail, error) = match sent {
                Err(reason) => (INVALID, reason.clone(), Err(reason)),
                Ok(future) => match future.await {
                    Ok(response) => {
                        shared.counters.completed();
                        forget(&shared, &key, &ids).await;
                        return Ok(Aggregated::Released {
                            group: key,
                            count,
                            rule,
                            response,
                        });
                    }
                    Err(e) => (INCOMPLETE, format!("the aggregate was refused: {e}"), Ok(e)),
                },
            };
            if config.dead_letters.is_none() {
                return Err(match error {
                    Err(reason) => AggregateError::Combine {
                        group: key.to_string(),
                        reason,
                        messages,
                    },
                    Ok(error) => AggregateError::Inner {
                        group: key.to_string(),
                        error,
                        messages,
                    },
                });
            }
            dead_letter(config, &shared.counters, &key, reason, detail, messages).await;
            forget(&shared, &key, &ids).await;
            Ok(Aggregated::DeadLettered { group: key, count })
        }))
    }
}

/// Puts an [`Aggregator`] in front of a service. Each aggregator it makes has its own groups
/// (in memory) and its own timer; they share the layer's counters.
#[derive(Clone, Debug)]
pub struct AggregatorLayer {
    config: AggregatorConfig,
    counters: Arc<Counters>,
}

impl AggregatorLayer {
    /// A layer of aggregators with this configuration.
    pub fn new(config: AggregatorConfig) -> Self {
        AggregatorLayer {
            config,
            counters: Arc::default(),
        }
    }

    /// The counters of all the aggregators this layer made.
    pub fn stats(&self) -> AggregatorStats {
        self.counters.snapshot()
    }
}

impl<S> Layer<S> for AggregatorLayer {
    type Service = Aggregator<S>;

    fn layer(&self, inner: S) -> Aggregator<S> {
        Aggregator::from_shared(
            inner,
            self.config.clone(),
            Box::new(InMemoryGroups::new()),
            self.counters.clone(),
        )
    }
}
