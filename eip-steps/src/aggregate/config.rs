//! An aggregator's configuration: plain data, checked as a whole before it runs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eip_core::channel::Channel;
use eip_core::message::Message;

use super::dead_letter::{DeadLetters, IncompleteGroup};
use super::key::Key;
use super::{SEQUENCE_NUMBER, SEQUENCE_SIZE};

/// A completion rule over a group's messages (arrival order).
pub type CompletionFn = dyn Fn(&[Message]) -> bool + Send + Sync;

/// How a group's messages become one payload; `Err(reason)` sends them to the dead letters.
pub type CombineFn = dyn Fn(&[Message]) -> Result<Bytes, String> + Send + Sync;

/// What becomes of a group that is given up before it completed (its timeout passed, or it
/// was the oldest when the bound on open groups was reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Incomplete {
    /// Combine what it has and send that on, like a complete group.
    #[default]
    Release,
    /// Hand its messages to the dead letters with reason `incomplete`.
    DeadLetter,
}

/// What becomes of the groups still open when the aggregator's owner stops it
/// ([`Aggregator::stop`](super::Aggregator::stop)), its flow shutting down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnStop {
    /// Combine what each has and send that on, like a complete group: nothing is lost.
    #[default]
    Release,
    /// Hand their messages to the dead letters with reason `incomplete`.
    DeadLetter,
    /// Forget them (a durable store deletes them), counted in `dropped` and logged.
    Drop,
    /// Leave them in the store: a durable one gives them back at the next start. With groups
    /// kept in memory only, they end with the process.
    Keep,
}

impl fmt::Display for OnStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OnStop::Release => "released",
            OnStop::DeadLetter => "dead-lettered",
            OnStop::Drop => "dropped",
            OnStop::Keep => "kept",
        })
    }
}

/// What happens when a message would open a group beyond the bound on open groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// The oldest open group is given up (see [`Incomplete`]) to make room.
    #[default]
    GiveUpOldest,
    /// The message is refused ([`AggregateError::Full`](super::AggregateError::Full), not
    /// permanent: redelivered later, when a group has completed).
    Refuse,
}

/// Which rule completed, or gave up, a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// It reached the configured size.
    Size,
    /// Every part of a split sequence is present.
    AllParts,
    /// The caller's completion predicate said so.
    Predicate,
    /// Its timeout since the first message passed.
    Timeout,
    /// It was the oldest group when another had to open beyond the bound.
    Overflow,
    /// The aggregator was stopped with the group still open.
    Stop,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Size => "size",
            Rule::AllParts => "all parts",
            Rule::Predicate => "predicate",
            Rule::Timeout => "timeout",
            Rule::Overflow => "overflow",
            Rule::Stop => "stop",
        })
    }
}

/// A configuration that can not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigProblem {
    /// No rule would ever complete a group.
    #[error("no completion rule: set a size, a timeout, a predicate or all-parts")]
    NoCompletion,
    /// A size of 0.
    #[error("the completion size must be at least 1")]
    ZeroSize,
    /// A timeout of 0.
    #[error("the completion timeout must be longer than 0")]
    ZeroTimeout,
    /// A bound of 0 open groups.
    #[error("the bound on open groups must be at least 1")]
    ZeroMaxGroups,
    /// Incomplete groups go to dead letters, but none are set.
    #[error(
        "incomplete groups go to the dead letters (at their timeout or at stop), but no dead \
         letter channel or callback is set"
    )]
    NoDeadLetters,
}

/// Every problem of a configuration, not just the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("aggregator configuration: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct ConfigError(pub Vec<ConfigProblem>);

/// A checked aggregator configuration, shared by the service, its clones and its timer.
#[derive(Clone)]
pub struct AggregatorConfig {
    pub(crate) correlation: Key,
    pub(crate) sequence_number: Key,
    pub(crate) sequence_size: Key,
    pub(crate) size: Option<usize>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) predicate: Option<Arc<CompletionFn>>,
    pub(crate) all_parts: bool,
    pub(crate) combine: Option<Arc<CombineFn>>,
    pub(crate) incomplete: Incomplete,
    pub(crate) on_stop: OnStop,
    pub(crate) max_groups: usize,
    pub(crate) overflow: Overflow,
    pub(crate) dead_letters: Option<DeadLetters>,
}

impl fmt::Debug for AggregatorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AggregatorConfig")
            .field("correlation", &self.correlation)
            .field("size", &self.size)
            .field("timeout", &self.timeout)
            .field("predicate", &self.predicate.is_some())
            .field("all_parts", &self.all_parts)
            .field("incomplete", &self.incomplete)
            .field("on_stop", &self.on_stop)
            .field("max_groups", &self.max_groups)
            .field("overflow", &self.overflow)
            .finish_non_exhaustive()
    }
}

/// Builds an aggregator's configuration; [`build`](Self::build) checks it as a whole.
#[derive(Clone, Debug)]
#[must_use]
pub struct AggregatorBuilder {
    config: AggregatorConfig,
}

impl Default for AggregatorBuilder {
    fn default() -> Self {
        AggregatorBuilder {
            config: AggregatorConfig {
                correlation: Key::correlation_id(),
                sequence_number: Key::header(SEQUENCE_NUMBER),
                sequence_size: Key::header(SEQUENCE_SIZE),
                size: None,
                timeout: None,
                predicate: None,
                all_parts: false,
                combine: None,
                incomplete: Incomplete::Release,
                on_stop: OnStop::Release,
                max_groups: 10_000,
                overflow: Overflow::GiveUpOldest,
                dead_letters: None,
            },
        }
    }
}

impl AggregatorBuilder {
    /// Correlates by `key` instead of the `correlation-id` header.
    pub fn correlate_by(mut self, key: Key) -> Self {
        self.config.correlation = key;
        self
    }

    /// Completes a group when it holds `size` messages.
    pub fn complete_at_size(mut self, size: usize) -> Self {
        self.config.size = Some(size);
        self
    }

    /// Gives a group up `timeout` after its first message (see [`Incomplete`]).
    pub fn complete_after(mut self, timeout: Duration) -> Self {
        self.config.timeout = Some(timeout);
        self
    }

    /// Completes a group when `predicate` holds for its messages (arrival order).
    pub fn complete_when(
        mut self,
        predicate: impl Fn(&[Message]) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.predicate = Some(Arc::new(predicate));
        self
    }

    /// Completes a group when it holds every part of a split: `sequence-size` known from some
    /// part, and each `sequence-number` from 1 to it present.
    pub fn complete_with_all_parts(mut self) -> Self {
        self.config.all_parts = true;
        self
    }

    /// Reads the sequence number and size from these keys instead of the `sequence-number` and
    /// `sequence-size` headers.
    pub fn sequence_by(mut self, number: Key, size: Key) -> Self {
        self.config.sequence_number = number;
        self.config.sequence_size = size;
        self
    }

    /// Combines a group's messages with `combine` instead of into a JSON array.
    pub fn combine_with(
        mut self,
        combine: impl Fn(&[Message]) -> Result<Bytes, String> + Send + Sync + 'static,
    ) -> Self {
        self.config.combine = Some(Arc::new(combine));
        self
    }

    /// What to do with a group given up before it completed.
    pub fn on_incomplete(mut self, incomplete: Incomplete) -> Self {
        self.config.incomplete = incomplete;
        self
    }

    /// What to do with the groups still open when the aggregator is stopped (released by
    /// default).
    pub fn on_stop(mut self, on_stop: OnStop) -> Self {
        self.config.on_stop = on_stop;
        self
    }

    /// At most `max` open groups (10 000 by default), and what to do beyond.
    pub fn max_groups(mut self, max: usize, overflow: Overflow) -> Self {
        self.config.max_groups = max;
        self.config.overflow = overflow;
        self
    }

    /// Sends dead letters (incomplete groups, groups that could not be combined or sent) to
    /// `channel`, each message with a death record.
    pub fn dead_letter_channel(mut self, channel: impl Into<Channel>) -> Self {
        self.config.dead_letters = Some(DeadLetters::Channel(channel.into()));
        self
    }

    /// Hands dead letters to `callback`.
    pub fn dead_letter_callback(
        mut self,
        callback: impl Fn(IncompleteGroup) + Send + Sync + 'static,
    ) -> Self {
        self.config.dead_letters = Some(DeadLetters::Callback(Arc::new(callback)));
        self
    }

    /// The configuration, checked: every problem is reported.
    pub fn build(self) -> Result<AggregatorConfig, ConfigError> {
        let c = &self.config;
        let mut problems = Vec::new();
        if c.size.is_none() && c.timeout.is_none() && c.predicate.is_none() && !c.all_parts {
            problems.push(ConfigProblem::NoCompletion);
        }
        if c.size == Some(0) {
            problems.push(ConfigProblem::ZeroSize);
        }
        if c.timeout == Some(Duration::ZERO) {
            problems.push(ConfigProblem::ZeroTimeout);
        }
        if c.max_groups == 0 {
            problems.push(ConfigProblem::ZeroMaxGroups);
        }
        let dead_letters_needed =
            c.incomplete == Incomplete::DeadLetter || c.on_stop == OnStop::DeadLetter;
        if dead_letters_needed && c.dead_letters.is_none() {
            problems.push(ConfigProblem::NoDeadLetters);
        }
        if problems.is_empty() {
            Ok(self.config)
        } else {
            Err(ConfigError(problems))
        }
    }
}
