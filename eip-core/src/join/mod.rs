//! Channel joins: routing from a source channel to a destination channel or queue.
//!
//! A [`Join`] forwards every message published on its source (a publish-subscribe channel) to
//! its destination, optionally only those its filter accepts. Joins are router nodes evaluated
//! as part of the publish: when `publish` completes, the message is stored on the source and on
//! every channel the joins took it to. Joins are created and removed at runtime; a publish sees
//! the set of joins as it was when it reached each channel, so messages published after a
//! change completes follow the new joins, and none is lost or stored twice by the change.
//!
//! **Hop count.** A join has a hop count (default 10): how many further joins a message that
//! crossed it may cross. Crossing a join with hop count `H` leaves the message a remaining
//! budget of `H` at the destination, or `remaining - 1` if that is smaller (the budget carried
//! from earlier joins): along a chain the smaller budget wins, and a later join can shorten the
//! trip but never lengthen it. A message whose budget is 0 crosses no more joins, so hop count 0
//! means "to the destination and no further". With channels `channel0` to `channel9` joined in a
//! chain and the first join's hop count 5, a message published to `channel0` is stored on
//! `channel0` through `channel6` (five intermediate stores, then one more) and not on `channel7`
//! to `channel9`. The remaining budget travels in the `hop-budget` header.
//!
//! **Loop detection.** A channel or queue never stores the same message twice, however many
//! paths lead to it: a publish follows joins breadth first and stores at each channel at most
//! once (a cycle `channel0 ⇄ channel1` stores once on each; a diamond `A → B → D`, `A → C → D`
//! stores once on `D`), and channels that take part in joins remember recent ids across
//! publishes (see [`LoopDetection`](crate::channel::LoopDetection) for the bounds).
//!
//! **Archival joins** go from a channel to a queue (point-to-point channel) and skip the
//! duplicate check at the queue, so a queue reached by two archival joins keeps both copies:
//! an audit trail of every route a message took.
//!
//! A queue can never be a join's source: its messages belong to one consumer each.
//!
//! **Where the code lives.** This module depends on `channel`, never the reverse. A
//! publish-subscribe channel holds the joins leaving it as plain data ([`Join`] and [`JoinId`]
//! are defined in `channel/outgoing.rs`, below both; their methods are here) and, having stored
//! a message, calls the function this module attached with the first join (`propagate.rs`).
//! Where joins take a message is decided once (`walk.rs`) and carried out by storing
//! (`propagate.rs`) or by recording ([`Tracer`], and [`Channel::trace`] on top of it). What one
//! channel does with one message (datatype, time-to-live, deletion, loop memory) is that
//! channel's admission, the same rule for the real store and the dry run.

mod budget;
mod propagate;
mod trace;
mod walk;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::channel::outgoing::{Join, JoinId};
pub use trace::{Invalidated, Traced, Tracer};

use crate::channel::{Channel, ChannelKind, Selector};
use crate::message::Message;

/// The hop count of a join created without one.
pub const DEFAULT_HOPS: u32 = 10;

/// A join that can not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// A point-to-point channel was named as the source.
    #[error(
        "`{channel}` is a queue (point-to-point channel); a queue can not be the source of a join, only its destination"
    )]
    QueueAsSource {
        /// The channel.
        channel: String,
    },
    /// An archival join must end at a queue.
    #[error(
        "archival join from `{source_channel}` to `{destination}`: the destination must be a queue (point-to-point channel), not a publish-subscribe channel"
    )]
    ArchivalToChannel {
        /// The source channel.
        source_channel: String,
        /// The destination that is not a queue.
        destination: String,
    },
    /// The source channel was deleted.
    #[error("channel `{channel}` is deleted")]
    SourceClosed {
        /// The channel.
        channel: String,
    },
}

/// Builds a [`Join`]; [`create`](JoinBuilder::create) attaches it to its source.
#[must_use]
pub struct JoinBuilder {
    source: Channel,
    destination: Channel,
    filter: Option<Selector>,
    hops: u32,
    archival: bool,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Join {
    /// A join from `source` to `destination`, hop count [`DEFAULT_HOPS`], no filter.
    pub fn builder(source: impl Into<Channel>, destination: impl Into<Channel>) -> JoinBuilder {
        JoinBuilder {
            source: source.into(),
            destination: destination.into(),
            filter: None,
            hops: DEFAULT_HOPS,
            archival: false,
        }
    }

    /// The join's id.
    pub fn id(&self) -> JoinId {
        self.id
    }

    /// The source channel's name.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The destination.
    pub fn destination(&self) -> &Channel {
        &self.destination
    }

    /// The hop count.
    pub fn hops(&self) -> u32 {
        self.hops
    }

    /// Whether it is an archival join (no duplicate check at the destination).
    pub fn is_archival(&self) -> bool {
        self.archival
    }

    /// The filter, if any.
    pub fn filter(&self) -> Option<&Selector> {
        self.filter.as_ref()
    }

    /// The hop budget `msg`, arriving with `remaining` (see [`remaining`]), would carry on
    /// to the destination, or `None` if it does not cross: its budget is spent, or the filter
    /// refuses it. The hop arithmetic of the module documentation, in one place.
    pub(crate) fn crossing(&self, msg: &Message, remaining: Option<u32>) -> Option<u32> {
        let budget = match remaining {
            Some(0) => return None,
            Some(r) => (r - 1).min(self.hops),
            None => self.hops,
        };
        if let Some(filter) = &self.filter
            && !filter.matches(msg)
        {
            return None;
        }
        Some(budget)
    }
}

/// The hop budget `msg` has left: `None` for no limit yet (it has crossed no join).
pub(crate) fn remaining(msg: &Message) -> Option<u32> {
    // An unreadable budget can not be honoured; crossing no further is the safe reading.
    msg.hop_budget().unwrap_or(Some(0))
}

impl fmt::Debug for Join {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Join")
            .field("id", &self.id)
            .field("source", &self.source)
            .field("destination", &self.destination.name())
            .field("filter", &self.filter)
            .field("hops", &self.hops)
            .field("archival", &self.archival)
            .finish()
    }
}

impl fmt::Debug for JoinBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinBuilder")
            .field("source", &self.source.name())
            .field("destination", &self.destination.name())
            .field("filter", &self.filter)
            .field("hops", &self.hops)
            .field("archival", &self.archival)
            .finish()
    }
}

impl JoinBuilder {
    /// Forwards only the messages `filter` accepts (a [`Selector`], or anything that converts
    /// into one, such as a predicate).
    pub fn filter(mut self, filter: impl Into<Selector>) -> Self {
        self.filter = Some(filter.into());
        self
    }

    /// The hop count: how many further joins a message may cross after this one (0: to the
    /// destination and no further).
    pub fn hops(mut self, hops: u32) -> Self {
        self.hops = hops;
        self
    }

    /// Makes it an archival join: the destination (a queue) keeps every copy that arrives.
    pub fn archival(mut self, archival: bool) -> Self {
        self.archival = archival;
        self
    }

    /// Checks the join and attaches it to its source; messages published from now on follow it.
    pub fn create(self) -> Result<JoinId, JoinError> {
        let source = match &self.source {
            Channel::PublishSubscribe(c) => c.clone(),
            Channel::PointToPoint(q) => {
                return Err(JoinError::QueueAsSource {
                    channel: q.name().to_owned(),
                });
            }
        };
        if self.archival && self.destination.kind() != ChannelKind::PointToPoint {
            return Err(JoinError::ArchivalToChannel {
                source_channel: source.name().to_owned(),
                destination: self.destination.name().to_owned(),
            });
        }
        let id = JoinId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        source.loop_guard().enable();
        if !self.archival {
            self.destination.loop_guard().enable();
        }
        let join = Join {
            id,
            source: source.name().to_owned(),
            destination: self.destination,
            filter: self.filter,
            hops: self.hops,
            archival: self.archival,
        };
        if source.add_join(join, propagate::follow) {
            Ok(id)
        } else {
            Err(JoinError::SourceClosed {
                channel: source.name().to_owned(),
            })
        }
    }
}
