//! Deliveries and receivers: taking a message and saying what became of it.
//!
//! [`Receiver::recv`] hands out a [`Delivery`]. The delivery must be settled: [`ack`]
//! (processed, gone), [`nack`] (put back at the head of the channel for redelivery, its
//! redelivery count raised) or [`reject`] (to the dead letter channel with reason `rejected`).
//! A delivery dropped without settling is put back, as a nack: a consumer that crashes or is
//! cancelled loses nothing. Until it is settled a delivery counts against the channel's capacity.
//!
//! [`ack`]: Delivery::ack
//! [`nack`]: Delivery::nack
//! [`reject`]: Delivery::reject

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::anchor::{Anchor, LaneRef};
use super::lane::Lane;
use super::redelivery::RedeliveryPolicy;
use super::selector::Selector;
use crate::message::{DeathReason, Message, names, now_millis};
use crate::store::{Select, Take, TakeOne, take_parked};

/// A message taken from a channel, to be settled exactly once.
pub struct Delivery {
    message: Option<Message>,
    /// The lane it came from, handed out by its receiver's [`Anchor`].
    queue: LaneRef,
}

/// Gives back the in-flight slot even if the settling future is cancelled half-way.
struct Release<'a>(&'a Lane, &'a Message);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.0.store.release(self.1);
    }
}

/// Dead-letters a message a receiver met and can not deliver (expired), releasing it from
/// the store once done.
async fn dead_letter_undeliverable(queue: Arc<Lane>, msg: Message, reason: DeathReason) {
    let _release = Release(&queue, &msg);
    queue.dead_letter(msg.clone(), reason, None).await;
}

impl Delivery {
    pub(crate) fn new(message: Message, queue: LaneRef) -> Self {
        Delivery {
            message: Some(message),
            queue,
        }
    }

    /// The message.
    pub fn message(&self) -> &Message {
        // Only `settle`-style methods, which consume `self`, take the message out.
        self.message
            .as_ref()
            .unwrap_or_else(|| unreachable!("delivery already settled"))
    }

    /// The name of the channel it came from.
    pub fn channel(&self) -> &str {
        &self.queue.lane().name
    }

    /// The redelivery policy of the channel it came from.
    pub fn redelivery_policy(&self) -> &RedeliveryPolicy {
        &self.queue.lane().redelivery
    }

    /// Processed: the message is gone from the channel.
    // Inlined where it is called (across crates, too): settling every message, a call cost
    // more than the settle's own few instructions.
    #[inline]
    pub fn ack(mut self) {
        if let Some(msg) = &self.message {
            self.queue.lane().store.settle(msg);
        }
        // Dropped where it lies: moved out first, the message's 88 bytes would be read back
        // at once from the stores that just wrote them, a stall on every ack.
        self.message = None;
    }

    /// Not processed: back to the head of the channel, to be delivered again.
    pub fn nack(mut self) {
        if let Some(msg) = self.message.take() {
            self.queue.lane().requeue(msg);
        }
    }

    /// Refused: to the channel's dead letter channel with reason `rejected` and this error.
    pub async fn reject(self, error: impl Into<String>) {
        self.dead_letter(DeathReason::Rejected, Some(error.into()))
            .await;
    }

    /// To the dead letter channel with any reason (used by consumer endpoints for
    /// `max-redeliveries`). Cancel-safe: once started, the message reaches the dead letter
    /// channel even if this future is dropped.
    pub async fn dead_letter(mut self, reason: DeathReason, error: Option<String>) {
        if let Some(msg) = self.message.take() {
            let queue = self.queue.lane().clone();
            let _release = Release(&queue, &msg);
            queue.dead_letter(msg.clone(), reason, error).await;
        }
    }
}

impl Drop for Delivery {
    #[inline]
    fn drop(&mut self) {
        if let Some(msg) = self.message.take() {
            self.queue.lane().requeue(msg);
        }
    }
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery")
            .field("channel", &self.channel())
            .field("message", &self.message)
            .finish()
    }
}

pin_project! {
    /// [`Receiver::recv`]'s future. Hand-written, so that its poll is inlined where it is
    /// awaited: the common paths (a message waiting) are done there, without a call. As an
    /// `async fn`, its poll was a call of its own wherever the caller's code grew, and the
    /// delivery it made (96 bytes) was written to the call's result and read back at once, a
    /// stall on every delivery. What waits is an `async fn` (`waiting`), made in place.
    struct Recv<'a, W, F> {
        // Until the first poll.
        receiver: Option<&'a mut Receiver>,
        waiting: W,
        #[pin]
        slow: Option<F>,
    }
}

impl<'a, W, F> Future for Recv<'a, W, F>
where
    W: Fn(&'a mut Receiver, bool) -> F,
    F: Future<Output = Option<Delivery>>,
{
    type Output = Option<Delivery>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        let mut this = self.project();
        if let Some(receiver) = this.receiver.take() {
            let park = match receiver.recv_now() {
                Now::Ready(delivery) => return Poll::Ready(delivery),
                Now::Park => true,
                Now::Look => false,
            };
            this.slow.set(Some((this.waiting)(receiver, park)));
        }
        match this.slow.as_pin_mut() {
            Some(slow) => slow.poll(cx),
            None => panic!("`Receiver::recv`'s future polled after it completed"),
        }
    }
}

/// What [`Receiver::recv`] found without waiting.
enum Now {
    /// A delivery, or `None`: the channel is closed.
    Ready(Option<Delivery>),
    /// The channel has nothing now: park.
    Park,
    /// Something to look at on the slow path (the buffer, a selector, a batch).
    Look,
}

/// Why [`Receiver::try_recv`] returned nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TryRecvError {
    /// Nothing this receiver selects is waiting.
    #[error("no message waiting")]
    Empty,
    /// The channel is closed and holds nothing more for this receiver.
    #[error("channel closed")]
    Closed,
}

/// One consumer's end of a channel. Several receivers of one channel compete for its messages.
///
/// A receiver may **prefetch**: take up to `prefetch` messages from the channel in one go and
/// hand them out one by one, as RabbitMQ's consumer prefetch does. Prefetched messages count as
/// in flight (against the channel's capacity) until settled; those not yet handed out when the
/// receiver is dropped go back to the head of the channel in their order, with no redelivery
/// counted. Expiration is checked when a message is handed out. Point-to-point receivers
/// prefetch 1 by default, so competing consumers share work message by message; subscriptions,
/// which usually have one consumer, prefetch [`SUBSCRIPTION_PREFETCH`].
pub struct Receiver {
    /// The lane, and the references to it its deliveries hold.
    queue: Anchor,
    selector: Option<Selector>,
    prefetch: usize,
    buffer: VecDeque<Message>,
}

/// How many messages a subscription's receiver takes at once by default.
pub const SUBSCRIPTION_PREFETCH: usize = 32;

impl Receiver {
    pub(crate) fn new(queue: Arc<Lane>, selector: Option<Selector>) -> Self {
        Receiver {
            queue: Anchor::new(queue),
            selector,
            prefetch: 1,
            buffer: VecDeque::new(),
        }
    }

    /// Takes up to `prefetch` messages (at least 1) from the channel at a time.
    #[must_use]
    pub fn with_prefetch(mut self, prefetch: usize) -> Self {
        self.prefetch = prefetch.max(1);
        self
    }

    /// How many messages it takes at a time.
    pub fn prefetch(&self) -> usize {
        self.prefetch
    }

    /// Hands out the next buffered message that has not expired; expired ones are dead-lettered
    /// with `dead_letter_now` (no waiting). Once the channel is closed nothing more is handed
    /// out: what the buffer holds is dead-lettered with reason `channel-deleted`.
    fn next_buffered_now(&mut self) -> Option<Delivery> {
        while let Some(msg) = self.buffer.pop_front() {
            if let Some(reason) = self.undeliverable(&msg) {
                self.queue.lane().store.release(&msg);
                self.queue.lane().dead_letter_now(msg, reason, None);
                continue;
            }
            return Some(Delivery::new(msg, self.queue.hand_out()));
        }
        None
    }

    /// The next buffered message, if there is one and it may be handed out as it is: what
    /// most calls of [`recv`](Self::recv) on a prefetching receiver find. Inlined: returned
    /// from a call of its own, the delivery (96 bytes) was read back at once from the stores
    /// that wrote it to be moved into `recv`'s result, a stall on every delivery.
    #[inline(always)]
    fn buffered_deliverable(&mut self) -> Option<Delivery> {
        let msg = self.buffer.front()?;
        if self.undeliverable(msg).is_some() {
            return None;
        }
        let msg = self.buffer.pop_front()?;
        Some(Delivery::new(msg, self.queue.hand_out()))
    }

    /// Why a prefetched message must not be handed out, if it must not.
    fn undeliverable(&self, msg: &Message) -> Option<DeathReason> {
        if self.queue.lane().store.is_closed() {
            Some(DeathReason::ChannelDeleted)
        } else if is_expired(msg) {
            Some(DeathReason::Expired)
        } else {
            None
        }
    }

    /// The next message (that this receiver selects), waiting for one. `None` once the channel
    /// is closed and nothing more is there for this receiver. Expired messages met on the way
    /// go to the dead letter channel with reason `expired`. Cancel-safe.
    pub fn recv(&mut self) -> impl Future<Output = Option<Delivery>> + Send + '_ {
        Recv {
            receiver: Some(self),
            waiting: Receiver::recv_waiting,
            slow: None,
        }
    }

    /// What [`recv`](Self::recv) finds without waiting, on its common paths: a buffered
    /// message that may be handed out, or (without a selector) the first one the channel has.
    ///
    /// It repeats the first half of [`take_now`](Self::take_now) on purpose: built on one
    /// helper shared with it (inlined into both), or on `take_now` itself, the consumer loops
    /// of the benchmarks ran 15–20 % slower on both sides of the join chain and point-to-point
    /// receives lost what this path gained (2026-12-06, alternated builds).
    #[inline(always)]
    fn recv_now(&mut self) -> Now {
        if !self.buffer.is_empty() {
            return match self.buffered_deliverable() {
                Some(delivery) => Now::Ready(Some(delivery)),
                None => Now::Look,
            };
        }
        if self.selector.is_some() {
            return Now::Look;
        }
        let store = &self.queue.lane().store;
        let first = if self.prefetch == 1 {
            store.try_take_one()
        } else {
            // The rest of a prefetch goes to the buffer (empty here).
            store.try_take_first(self.prefetch, &mut self.buffer)
        };
        match first {
            TakeOne::Taken(msg) if !is_expired(&msg) => {
                Now::Ready(Some(Delivery::new(msg, self.queue.hand_out())))
            }
            TakeOne::Taken(msg) => {
                // Expired: the buffered path dead-letters it.
                self.buffer.push_front(msg);
                Now::Look
            }
            TakeOne::Empty => Now::Park,
            TakeOne::Closed => Now::Ready(None),
            TakeOne::Batched => Now::Look,
        }
    }

    /// The rest of [`recv`](Self::recv): what the buffer holds (dead-lettering what may not be
    /// handed out), then the channel, parking while it has nothing. `park`: the channel was
    /// just found empty, so park first.
    async fn recv_waiting(&mut self, mut park: bool) -> Option<Delivery> {
        loop {
            if !park {
                while let Some(msg) = self.buffer.pop_front() {
                    if let Some(reason) = self.undeliverable(&msg) {
                        // Boxed, with all it holds: inline, dead-lettering's future (a send to
                        // another channel) would make every `recv`'s future several times
                        // larger, and each one is moved.
                        let queue = self.queue.lane().clone();
                        Box::pin(dead_letter_undeliverable(queue, msg, reason)).await;
                        continue;
                    }
                    return Some(Delivery::new(msg, self.queue.hand_out()));
                }
                match self.take_now() {
                    Ok(delivery) => return Some(delivery),
                    Err(Take::Taken) => continue,
                    Err(Take::Closed) => return None,
                    Err(Take::Empty) => {}
                }
            }
            park = false;
            let store = &self.queue.lane().store;
            let select = self.selector.as_ref().map(|s| s as &dyn Select);
            let took = match store.parking() {
                // Parked inline: no allocation, however often the consumer catches up.
                Some(parking) => {
                    take_parked(&**store, parking, select, self.prefetch, &mut self.buffer).await
                }
                None => store.take(select, self.prefetch, &mut self.buffer).await,
            };
            if !took {
                return None;
            }
        }
    }

    /// Takes what this receiver selects from the channel without waiting: the first message
    /// as a delivery when it may be handed out, what else there is into the buffer.
    fn take_now(&mut self) -> Result<Delivery, Take> {
        let store = &self.queue.lane().store;
        let select = self.selector.as_ref().map(|s| s as &dyn Select);
        if select.is_some() {
            return Err(store.try_take(select, self.prefetch, &mut self.buffer));
        }
        // Everything selected: the rest of a prefetch goes through the buffer (empty here).
        let first = if self.prefetch == 1 {
            store.try_take_one()
        } else {
            store.try_take_first(self.prefetch, &mut self.buffer)
        };
        Err(match first {
            TakeOne::Taken(msg) if !is_expired(&msg) => {
                return Ok(Delivery::new(msg, self.queue.hand_out()));
            }
            TakeOne::Taken(msg) => {
                // Expired: the buffered path dead-letters it, ahead of the rest.
                self.buffer.push_front(msg);
                Take::Taken
            }
            TakeOne::Empty => Take::Empty,
            TakeOne::Closed => Take::Closed,
            TakeOne::Batched => store.try_take(select, self.prefetch, &mut self.buffer),
        })
    }

    /// The next message if one is waiting now.
    pub fn try_recv(&mut self) -> Result<Delivery, TryRecvError> {
        loop {
            if let Some(d) = self.next_buffered_now() {
                return Ok(d);
            }
            let select = self.selector.as_ref().map(|s| s as &dyn Select);
            match self
                .queue
                .lane()
                .store
                .try_take(select, self.prefetch, &mut self.buffer)
            {
                Take::Taken => {}
                Take::Empty => return Err(TryRecvError::Empty),
                Take::Closed => return Err(TryRecvError::Closed),
            }
        }
    }

    /// The name of the channel.
    pub fn channel(&self) -> &str {
        &self.queue.lane().name
    }

    /// The selector, for a selective consumer.
    pub fn selector(&self) -> Option<&Selector> {
        self.selector.as_ref()
    }
}

/// Reads the clock only for messages that carry an expiration. Inlined: asked of every
/// delivery, and most messages have no headers at all, which one comparison tells; as a call,
/// its entry and exit cost more than that.
#[inline]
fn is_expired(msg: &Message) -> bool {
    msg.headers().contains(names::EXPIRES_AT) && msg.is_expired_at(now_millis())
}

impl Clone for Receiver {
    fn clone(&self) -> Self {
        Receiver::new(self.queue.lane().clone(), self.selector.clone()).with_prefetch(self.prefetch)
    }
}

impl Receiver {
    /// Gives prefetched, not yet handed out messages back to the head of the channel.
    pub(crate) fn return_prefetched(&mut self) {
        if !self.buffer.is_empty() {
            self.queue.lane().unprefetch(&mut self.buffer);
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.return_prefetched();
    }
}

impl fmt::Debug for Receiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("channel", &self.channel())
            .field("selector", &self.selector)
            .field("prefetch", &self.prefetch)
            .finish()
    }
}
