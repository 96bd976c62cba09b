//! The aggregator's decisions, as pure functions of its configuration, a group and a message:
//! the live service and the dry run (`Aggregator::peek`) both ask these.

use std::fmt;

use eip_core::message::Message;

use super::config::{AggregatorConfig, Rule};
use super::group::{Group, Part};
use super::key::KeyValue;

/// What an aggregator does, or would do, with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Held in its group, which is not complete yet.
    Held {
        /// The correlation key.
        group: String,
        /// How many messages the group holds with this one.
        count: usize,
        /// How many it waits for, when a size or a sequence size says.
        expected: Option<u64>,
        /// The oldest group, given up to make room for this one's new group.
        gives_up: Option<String>,
    },
    /// Completes its group: the aggregate is sent on.
    Completes {
        /// The correlation key.
        group: String,
        /// How many messages the aggregate holds.
        count: usize,
        /// The rule that completed it.
        rule: Rule,
    },
    /// Its sequence number is in the group already: ignored (counted, not added).
    Duplicate {
        /// The correlation key.
        group: String,
        /// The sequence number.
        number: u64,
    },
    /// It opens a group beyond the bound and the aggregator refuses it.
    Refused {
        /// How many groups are open.
        open: usize,
    },
    /// It can not be aggregated: handed back with the reason.
    Invalid {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Held {
                group,
                count,
                expected,
                gives_up,
            } => {
                write!(f, "held in group {group}, {count}")?;
                if let Some(n) = expected {
                    write!(f, " of {n}")?;
                }
                if let Some(old) = gives_up {
                    write!(f, " (gives up group {old})")?;
                }
                Ok(())
            }
            Decision::Completes { group, count, rule } => {
                write!(f, "completes group {group} with {count} messages ({rule})")
            }
            Decision::Duplicate { group, number } => {
                write!(f, "duplicate of part {number} in group {group}: ignored")
            }
            Decision::Refused { open } => write!(f, "refused: {open} groups open"),
            Decision::Invalid { reason } => write!(f, "invalid: {reason}"),
        }
    }
}

/// A message's sequence headers, read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sequence {
    pub(crate) number: Option<u64>,
    pub(crate) size: Option<u64>,
}

impl Sequence {
    pub(crate) fn part(self, message: Message) -> Part {
        Part {
            message,
            number: self.number,
            size: self.size,
        }
    }
}

/// Why a part does not go into its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its sequence number is in the group already.
    Duplicate(u64),
    /// Its sequence headers do not fit the group's.
    Invalid(String),
}

impl AggregatorConfig {
    /// The correlation key of a message and its sequence number and size, or why it is
    /// invalid. Reads the message only, so that it moves once, into its group.
    pub(crate) fn read(&self, message: &Message) -> Result<(KeyValue, Sequence), String> {
        let key = self
            .correlation
            .eval_detached(message)
            .map_err(|e| format!("correlation key: {e}"))?;
        let number = self
            .sequence_number
            .eval_optional_number(message)
            .map_err(|e| format!("sequence number: {e}"))?;
        let size = self
            .sequence_size
            .eval_optional_number(message)
            .map_err(|e| format!("sequence size: {e}"))?;
        if let (Some(n), Some(s)) = (number, size)
            && n > s
        {
            return Err(format!(
                "sequence number {n} is beyond the sequence size {s}"
            ));
        }
        Ok((key, Sequence { number, size }))
    }

    /// Whether `part` may join `group` (`None`: it opens a new one).
    /// `closed`: the key belongs to a split completed already.
    pub(crate) fn admit(
        &self,
        group: Option<&Group>,
        closed: bool,
        part: &Part,
    ) -> Result<(), Refusal> {
        let Some(group) = group else {
            return match part.number {
                Some(n) if closed => Err(Refusal::Duplicate(n)),
                _ => Ok(()),
            };
        };
        if let Some(n) = part.number
            && group.has_number(n)
        {
            return Err(Refusal::Duplicate(n));
        }
        match (group.sequence_size(), part.size) {
            (Some(had), Some(new)) if had != new => Err(Refusal::Invalid(format!(
                "sequence size {new} differs from the group's {had}"
            ))),
            (Some(size), None) if part.number.is_some_and(|n| n > size) => {
                Err(Refusal::Invalid(format!(
                    "sequence number {} is beyond the sequence size {size}",
                    part.number.unwrap_or(0)
                )))
            }
            (None, Some(size)) if group.max_number().is_some_and(|m| m > size) => {
                Err(Refusal::Invalid(format!(
                    "the group holds a part numbered beyond the sequence size {size}"
                )))
            }
            _ => Ok(()),
        }
    }

    /// The rule that completes `group` as it is now, if any (size first, then all parts, then
    /// the predicate).
    pub(crate) fn completion(&self, group: &Group) -> Option<Rule> {
        if self.size.is_some_and(|size| group.len() >= size) {
            return Some(Rule::Size);
        }
        if self.all_parts && group.has_all_parts() {
            return Some(Rule::AllParts);
        }
        if let Some(predicate) = &self.predicate
            && predicate(group.messages())
        {
            return Some(Rule::Predicate);
        }
        None
    }

    /// How many messages a group waits for, if a size or its sequence size says.
    pub(crate) fn expected(&self, group: &Group) -> Option<u64> {
        let by_size = self.size.and_then(|s| u64::try_from(s).ok());
        let by_parts = if self.all_parts {
            group.sequence_size()
        } else {
            None
        };
        match (by_size, by_parts) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
