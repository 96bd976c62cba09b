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
    let mut visited = Visited(vec![entry.identity()]);
    let mut work = VecDeque::new();
    next_hops(entry, message, &mut work);
    while let Some(hop) = work.pop_front() {
        if !hop.archival && !visited.first_time(&hop.channel) {
            continue;
        }
        if hop.channel.would_store(&hop.message, !hop.archival) {
            stored.push(hop.channel.name().to_owned());
            next_hops(&hop.channel, &hop.message, &mut work);
        }
    }
    stored
}
