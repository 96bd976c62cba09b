//! Following joins from the channel a message was published on.

use std::collections::{HashSet, VecDeque};

use crate::channel::{Channel, PublishSubscribe, Stored};
use crate::message::Message;

/// One store to make: a message arriving at a channel over a join.
struct Hop {
    channel: Channel,
    message: Message,
    archival: bool,
}

/// Queues the joins of `channel` (if it has any) that `message` crosses.
fn next_hops(channel: &Channel, message: &Message, work: &mut VecDeque<Hop>) {
    if let Channel::PublishSubscribe(pubsub) = channel {
        for join in pubsub.joins().iter() {
            if let Some(crossed) = join.cross(message) {
                work.push_back(Hop {
                    channel: join.destination().clone(),
                    message: crossed,
                    archival: join.is_archival(),
                });
            }
        }
    }
}

/// Having stored `message` on `entry`, stores it on every channel the joins take it to, breadth
/// first, each (archival destinations aside) at most once.
pub(crate) async fn propagate(entry: &PublishSubscribe, message: Message) {
    let entry = Channel::PublishSubscribe(entry.clone());
    let mut visited: HashSet<String> = HashSet::from([entry.name().to_owned()]);
    let mut work = VecDeque::new();
    next_hops(&entry, &message, &mut work);
    while let Some(hop) = work.pop_front() {
        if !hop.archival && !visited.insert(hop.channel.name().to_owned()) {
            continue;
        }
        match hop.channel.store(hop.message, !hop.archival).await {
            Stored::Yes(Some(message)) => next_hops(&hop.channel, &message, &mut work),
            Stored::Yes(None) | Stored::Invalid(_) | Stored::Duplicate => {}
            Stored::Closed(message) => tracing::warn!(
                channel = hop.channel.name(),
                message = %message.id(),
                "join destination is deleted: message not forwarded"
            ),
        }
    }
}

/// Where a message sent to `entry` would be stored, without storing it: the channel names in
/// the order a publish would store them, once per stored copy (an archival queue reached twice
/// appears twice). Datatype checks and the loop memory are consulted, not changed.
pub(crate) fn trace(entry: &Channel, message: &Message) -> Vec<String> {
    let mut stored = Vec::new();
    if !entry.would_store(message, true) {
        return stored;
    }
    stored.push(entry.name().to_owned());
    let mut visited: HashSet<String> = HashSet::from([entry.name().to_owned()]);
    let mut work = VecDeque::new();
    next_hops(entry, message, &mut work);
    while let Some(hop) = work.pop_front() {
        if !hop.archival && !visited.insert(hop.channel.name().to_owned()) {
            continue;
        }
        if hop.channel.would_store(&hop.message, !hop.archival) {
            stored.push(hop.channel.name().to_owned());
            next_hops(&hop.channel, &hop.message, &mut work);
        }
    }
    stored
}
