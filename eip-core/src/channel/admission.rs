//! Admission: the rules a channel applies to a message it is about to store, in one place for
//! sends, joins and dry runs.
//!
//! In order: a message that does not fit the channel's [datatype](super::datatype) is refused,
//! to go to the invalid message channel; one that fits gets the channel's time-to-live (its
//! `expires-at`); a deleted channel refuses it; and where loop detection decides, an id the
//! channel has stored before is refused as a duplicate. A message admitted by a channel that
//! records Message History gets the channel's entry at the end of its history. [`Rules::admit`] decides and only
//! decides: a store carries the decision out (it pushes, or diverts the misfit), a dry run
//! ([`Tracer`](crate::join::Tracer)) records it. The one piece of state it touches is the loop
//! memory, and only a store's admission changes that.

use std::time::Duration;

use super::datatype::DatatypeCheck;
use super::lane::Refused;
use super::{LoopGuard, Moment, StoreNow, Stored};
use crate::message::{HistoryKind, Message};

/// A channel's rules for what it stores, borrowed from the channel.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'a> {
    pub(crate) datatype: Option<&'a DatatypeCheck>,
    pub(crate) time_to_live: Option<Duration>,
    /// The channel's name, where it records itself in what it stores (Message History).
    pub(crate) history: Option<&'a str>,
    pub(crate) guard: &'a LoopGuard,
}

/// Whose admission it is: a store's changes the loop memory, a dry run's changes nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    /// A store. Given the time (`loops`), the loop memory decides, and remembers the id.
    Store { loops: Option<Moment> },
    /// A dry run. If `loops`, the loop memory decides, consulted as it is; `stored_earlier`:
    /// the dry run has stored this id here already, so the memory would know it by now.
    Dry { loops: bool, stored_earlier: bool },
}

/// Why a channel does not store a message.
#[derive(Debug)]
pub(crate) enum Refusal<'a> {
    /// It does not fit the datatype: `message` (as it arrived) goes to the invalid message
    /// channel of `check`.
    Invalid {
        check: &'a DatatypeCheck,
        reason: String,
        message: Message,
    },
    /// Loop detection has seen its id.
    Duplicate,
    /// The channel is deleted; the message, as it would have been stored.
    Closed(Message),
}

impl<'a> Rules<'a> {
    /// Whether a store's admission, loop memory aside, leaves every message as it is: no
    /// datatype to check, no time-to-live to set, no history to record.
    #[inline]
    pub(crate) fn change_nothing(&self) -> bool {
        self.datatype.is_none() && self.time_to_live.is_none() && self.history.is_none()
    }

    /// The message as the channel would store it, or why it would not. `deleted`: whether the
    /// channel is known to be deleted (a store that finds out as it pushes says `false`).
    // Always inlined: on the hot path of every send it must cost what the checks written out
    // in place did (`p2p 1x1` is within a few per cent of tokio's mpsc).
    #[inline(always)]
    pub(crate) fn admit(
        &self,
        mut msg: Message,
        deleted: bool,
        mode: Mode,
    ) -> Result<Message, Refusal<'a>> {
        if let Some(check) = self.datatype
            && let Err(reason) = check.datatype.check(&msg)
        {
            return Err(Refusal::Invalid {
                check,
                reason,
                message: msg,
            });
        }
        if let Some(ttl) = self.time_to_live {
            msg.expire_within(ttl);
        }
        if deleted {
            return Err(Refusal::Closed(msg));
        }
        let fresh = match mode {
            Mode::Store { loops: None } | Mode::Dry { loops: false, .. } => true,
            Mode::Store { loops: Some(now) } => self.guard.admit(msg.id(), now),
            Mode::Dry {
                loops: true,
                stored_earlier,
            } => !self.guard.is_on() || (!stored_earlier && self.guard.would_admit(msg.id())),
        };
        if fresh {
            if let Some(name) = self.history {
                msg.record_history(name, HistoryKind::Channel);
            }
            Ok(msg)
        } else {
            Err(Refusal::Duplicate)
        }
    }
}

impl Refusal<'_> {
    /// Carries a refusal out for a store at `channel`: a duplicate, or a deleted channel, at
    /// once; a misfit is diverted to the invalid message channel (counted, and waiting for room
    /// there), which is the rest of the store: boxed, owning what it needs (refusals are rare).
    pub(crate) fn carry_out(self, channel: &str) -> StoreNow {
        match self {
            Refusal::Invalid {
                check,
                reason,
                message,
            } => {
                let (check, channel) = (check.clone(), channel.to_owned());
                Err(Box::pin(async move {
                    check.divert(&channel, message, reason.clone()).await;
                    Stored::Invalid(reason)
                }))
            }
            Refusal::Duplicate => Ok(Stored::Duplicate),
            Refusal::Closed(message) => Ok(Stored::Refused(Refused::Closed(message))),
        }
    }
}
