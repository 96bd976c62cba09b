//! Following joins from the channel a message was published on.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use super::Join;
use crate::channel::{Channel, PublishSubscribe, Stored};
use crate::message::Message;

/// One store to make: a message arriving at a channel over a join.
struct Hop {
    channel: Channel,
    message: Message,
    archival: bool,
}

/// Queues the joins that `message` crosses.
fn cross_all(joins: &[Arc<Join>], message: &Message, work: &mut VecDeque<Hop>) {
    for join in joins {
        if let Some(crossed) = join.cross(message) {
            work.push_back(Hop {
                channel: join.destination().clone(),
                message: crossed,
                archival: join.is_archival(),
            });
        }
    }
}

/// Queues the joins of `channel` (if it can have any) that `message` crosses.
fn next_hops(channel: &Channel, message: &Message, work: &mut VecDeque<Hop>) {
    if let Channel::PublishSubscribe(pubsub) = channel {
        cross_all(&pubsub.joins(), message, work);
    }
}

/// Channels stored at in one publish. A publish touches few channels: a vector beats hashing.
struct Visited(Vec<usize>);

impl Visited {
    fn first_time(&mut self, channel: &Channel) -> bool {
        let id = channel.identity();
        if self.0.contains(&id) {
            false
        } else {
            self.0.push(id);
            true
        }
    }
}

/// Having stored `message` on `entry` (whose joins are `joins`), stores it on every channel the
/// joins take it to, breadth first, each (archival destinations aside) at most once.
pub(crate) async fn propagate(entry: &PublishSubscribe, joins: &[Arc<Join>], message: Message) {
    let now = Instant::now();
    let mut visited = Visited(vec![entry.identity()]);
    let mut work = VecDeque::new();
    cross_all(joins, &message, &mut work);
    while let Some(hop) = work.pop_front() {
        if !hop.archival && !visited.first_time(&hop.channel) {
            continue;
        }
        let loops = (!hop.archival).then_some(now);
        match hop.channel.store(hop.message, loops).await {
            Stored::Forward(message, joins) => cross_all(&joins, &message, &mut work),
            Stored::Yes | Stored::Invalid(_) | Stored::Duplicate => {}
            Stored::Refused(refused) => {
                let error = refused.into_send_error(hop.channel.name());
                tracing::warn!(
                    channel = hop.channel.name(),
                    %error,
                    "join destination did not take the message: not forwarded"
                )
            }
        }
    }
}

/// A dry run of everything one message does: the sends a flow would make with it, traced one
/// after another without storing anything, and remembering (as loop detection would) which
/// channels have stored its id so far.
///
/// Each [`send`](Self::send) follows joins from the channel sent to, exactly as a real send
/// would: hop budgets, filters, the breadth-first order, the once-per-channel rule for
/// non-archival arrivals, datatype checks (a misfit goes to the invalid message channel), and
/// the loop memory of the real channels (consulted, never changed). Across sends, a channel
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
    /// budget and all). An archival destination reached twice appears twice.
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
        if !self.store(entry, message, true, &mut traced) {
            return traced;
        }
        let mut visited = Visited(vec![entry.identity()]);
        let mut work = VecDeque::new();
        next_hops(entry, message, &mut work);
        while let Some(hop) = work.pop_front() {
            if !hop.archival && !visited.first_time(&hop.channel) {
                continue;
            }
            if self.store(&hop.channel, &hop.message, !hop.archival, &mut traced) {
                next_hops(&hop.channel, &hop.message, &mut work);
            }
        }
        traced
    }

    /// Whether `channel` would store `message`, recording the store, the diversion to the
    /// invalid message channel or the refusal in `traced`.
    fn store(
        &mut self,
        channel: &Channel,
        message: &Message,
        check_loops: bool,
        traced: &mut Traced,
    ) -> bool {
        if channel.is_closed() {
            return false;
        }
        if let Some(check) = channel.datatype_check()
            && let Err(reason) = check.datatype.check(message)
        {
            let invalid_channel = Channel::PointToPoint((*check.invalid).clone());
            let message = crate::channel::marked_dead(
                message.clone(),
                channel.name(),
                crate::message::DeathReason::Invalid,
                Some(reason.clone()),
            );
            traced.invalid.push(Invalidated {
                channel: channel.name().to_owned(),
                reason,
                invalid_channel,
                message,
            });
            return false;
        }
        let guard = channel.loop_guard();
        if check_loops && guard.is_on() {
            let id = channel.identity();
            if self.guarded.contains(&id) || !guard.would_admit(message.id()) {
                traced.duplicates.push(channel.name().to_owned());
                return false;
            }
            self.guarded.push(id);
        }
        traced.stored.push((channel.clone(), message.clone()));
        true
    }
}

/// Where a message sent to `entry` would be stored, without storing it: the channel names in
/// the order a publish would store them, once per stored copy (an archival queue reached twice
/// appears twice). Datatype checks and the loop memory are consulted, not changed.
pub(crate) fn trace(entry: &Channel, message: &Message) -> Vec<String> {
    Tracer::new()
        .send(entry, message)
        .stored
        .iter()
        .map(|(channel, _)| channel.name().to_owned())
        .collect()
}
