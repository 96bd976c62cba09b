//! Dry runs of joins: the [`Walk`](super::walk::Walk)'s decisions, each hop carried out by
//! recording where the message would be stored.

use super::walk::Walk;
use crate::channel::{Channel, Mode, Refusal, marked_dead};
use crate::message::{DeathReason, Message};

/// A dry run of everything one message does: the sends a flow would make with it, traced one
/// after another without storing anything, and remembering (as loop detection would) which
/// channels have stored its id so far.
///
/// Each [`send`](Self::send) follows joins from the channel sent to, exactly as a real send
/// would: hop budgets, filters, the breadth-first order, the once-per-channel rule for
/// non-archival arrivals, and at each channel that channel's own admission, the one a store
/// applies: datatype checks (a misfit goes to the invalid message channel), time-to-live (the
/// copy carries the `expires-at` the store would give it), and the loop memory of the real
/// channels (consulted, never changed). Across sends, a channel
/// that takes part in joins refuses an id it stored earlier in the same dry run, as its loop
/// memory would. Nothing is sent, stored or counted.
///
/// ```
/// use eip_core::{Message, channel::{Channel, PublishSubscribe}, join::{Join, Tracer}};
///
/// let a = PublishSubscribe::new("a", 10).unwrap();
/// let b = PublishSubscribe::new("b", 10).unwrap();
/// Join::builder(a.clone(), b.clone()).create().unwrap();
/// Join::builder(b.clone(), a.clone()).create().unwrap();
/// let msg = Message::new("event");
/// let mut tracer = Tracer::new();
/// let names = |t: &eip_core::join::Traced| t.stored.iter().map(|(c, _)| c.name().to_owned()).collect::<Vec<_>>();
/// assert_eq!(names(&tracer.send(&a.clone().into(), &msg)), ["a", "b"]);
/// // Sent again within the same flow run, the loop memory refuses it.
/// assert!(tracer.send(&b.into(), &msg).stored.is_empty());
/// ```
#[derive(Debug, Default)]
pub struct Tracer {
    /// Channels with loop detection on that stored the message in this dry run.
    guarded: Vec<usize>,
}

/// What one traced send would do.
#[derive(Debug, Clone, Default)]
pub struct Traced {
    /// Each store, in order: the channel and the message as it would be stored there (hop
    /// budget, expiration and all). An archival destination reached twice appears twice.
    pub stored: Vec<(Channel, Message)>,
    /// Each message a datatype channel would divert to its invalid message channel.
    pub invalid: Vec<Invalidated>,
    /// Channels whose loop detection would refuse the message.
    pub duplicates: Vec<String>,
}

/// A message a datatype channel would refuse.
#[derive(Debug, Clone)]
pub struct Invalidated {
    /// The datatype channel's name.
    pub channel: String,
    /// Why the message does not fit.
    pub reason: String,
    /// The invalid message channel it would go to.
    pub invalid_channel: Channel,
    /// The message as it would be stored there, death record included.
    pub message: Message,
}

impl Tracer {
    /// A dry run that has stored nothing yet.
    pub fn new() -> Self {
        Tracer::default()
    }

    /// Where sending `message` to `entry` would store it (see the type's documentation).
    pub fn send(&mut self, entry: &Channel, message: &Message) -> Traced {
        let mut traced = Traced::default();
        let Some(stored) = self.store(entry, message, true, &mut traced) else {
            return traced;
        };
        let mut walk = Walk::new(entry.identity());
        follow(&mut walk, entry, stored, None);
        while let Some((hop, message)) = walk.next() {
            let (to, loops) = (hop.via.destination(), hop.via.checks_loops());
            if let Some(stored) = self.store(to, &message, loops, &mut traced) {
                follow(&mut walk, to, stored, Some(hop.budget));
            }
        }
        traced
    }

    /// The message as `channel` would store it, if it would, by the channel's own admission
    /// (consulted in dry mode: nothing remembered, nothing diverted); records the store, the
    /// diversion to the invalid message channel or the refusal in `traced`.
    fn store(
        &mut self,
        channel: &Channel,
        message: &Message,
        check_loops: bool,
        traced: &mut Traced,
    ) -> Option<Message> {
        let id = channel.identity();
        let loops = check_loops && channel.loop_guard().is_on();
        let mode = Mode::Dry {
            loops,
            stored_earlier: self.guarded.contains(&id),
        };
        match channel.admit(message.clone(), mode) {
            Ok(stored) => {
                if loops {
                    self.guarded.push(id);
                }
                traced.stored.push((channel.clone(), stored.clone()));
                Some(stored)
            }
            Err(Refusal::Invalid {
                check,
                reason,
                message,
            }) => {
                traced.invalid.push(Invalidated {
                    channel: channel.name().to_owned(),
                    invalid_channel: Channel::PointToPoint((*check.invalid).clone()),
                    message: marked_dead(
                        message,
                        channel.name(),
                        DeathReason::Invalid,
                        Some(reason.clone()),
                    ),
                    reason,
                });
                None
            }
            Err(Refusal::Duplicate) => {
                traced.duplicates.push(channel.name().to_owned());
                None
            }
            Err(Refusal::Closed(_)) => None,
        }
    }
}

impl Channel {
    /// Where sending `msg` here would store it, without storing anything: the names of the
    /// channels in the order a send would store them (this one first, then those its joins
    /// lead to), once per stored copy. Empty if this channel would not store it (it does not
    /// fit the datatype, or loop detection has seen its id). Datatype checks and the loop
    /// memory are consulted, not changed. A dry run of joins, so the join module's (see
    /// [`Tracer`] for more of what a send would do).
    pub fn trace(&self, msg: &Message) -> Vec<String> {
        Tracer::new()
            .send(self, msg)
            .stored
            .iter()
            .map(|(channel, _)| channel.name().to_owned())
            .collect()
    }
}

/// Feeds the joins leaving `channel` (if it can have any) to the walk, as a store there would.
fn follow(walk: &mut Walk, channel: &Channel, message: Message, arrived_with: Option<u32>) {
    if let Channel::PublishSubscribe(pubsub) = channel {
        walk.stored(pubsub.joins().into(), message, arrived_with);
    }
}
