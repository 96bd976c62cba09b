//! Where a receiver waits for a store: parked inline on the store's `Notify`, no boxed wait.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::{MessageStore, Select, Take};
use crate::message::Message;

/// Where a receiver parks on a store.
///
/// Waiting for a message is the receiver's side of a channel; knowing when one may have
/// arrived is the store's. A store that can say *where* its receivers wait gives a
/// [`Parking`]: the `Notify` it wakes when a message may have arrived, the count of parked
/// receivers it reads before it pays for a wake-up, and, if it wakes one receiver at a time,
/// the count of parked *selective* receivers (which need every waiter woken: the one woken
/// might not select the new message). The receiver raises those counts while it parks, so a
/// store never needs to be told who its receivers are.
#[derive(Clone, Copy)]
pub struct Parking<'a> {
    readable: &'a Notify,
    parked: &'a AtomicUsize,
    selective: Option<&'a AtomicUsize>,
    woken: Option<&'a AtomicBool>,
    /// The store wakes one receiver per burst of arrivals (see [`Parking::woken_one`]).
    passes_on: bool,
}

impl<'a> Parking<'a> {
    /// Receivers park on `readable`, counted in `parked` while they do. The store wakes them
    /// all, or reads [`selective`](Self::selective) before it wakes just one.
    pub fn new(readable: &'a Notify, parked: &'a AtomicUsize) -> Self {
        Parking {
            readable,
            parked,
            selective: None,
            woken: None,
            passes_on: false,
        }
    }

    /// Parked receivers that select are counted in `selective` too (before they count in
    /// `parked`, so a store that sees one parked sees whether it selects).
    pub fn selective(mut self, selective: &'a AtomicUsize) -> Self {
        self.selective = Some(selective);
        self
    }

    /// Before each look a parked receiver clears `woken`: a store that wakes everyone once
    /// per arrival and skips the wake-ups until someone looked (a shared log's subscriptions)
    /// sets it when it wakes them.
    pub fn woken(mut self, woken: &'a AtomicBool) -> Self {
        self.woken = Some(woken);
        self
    }

    /// Like [`woken`](Self::woken) for a store that wakes *one* receiver per burst of
    /// arrivals: the receiver it woke, once it took something, wakes the next parked receiver
    /// in turn, so that competing receivers share a burst instead of leaving it to the first.
    pub fn woken_one(mut self, woken: &'a AtomicBool) -> Self {
        self.woken = Some(woken);
        self.passes_on = true;
        self
    }
}

/// Counts a parked taker or pusher for as long as it lives: a store reads the count before it
/// pays for a wake-up.
pub(crate) struct Parked<'a>(&'a AtomicUsize);

impl<'a> Parked<'a> {
    pub(crate) fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Parked(count)
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Times a receiver that found its store empty gives way to other tasks, looking again each
/// time, before it parks (see [`take_parked`]).
const SPINS: usize = 2;

/// Takes from `store` like [`MessageStore::take`], parked where its
/// [`parking`](MessageStore::parking) says: the wait of every store that has one, awaited
/// inline by receivers (no allocation) and boxed by the store's own `take`.
///
/// A receiver comes here having found the store empty. Before it parks it yields to the
/// runtime a few times ([`SPINS`]), looking again after each: a producer running on another
/// worker thread usually stores the next message meanwhile, and a receiver that finds it so
/// costs neither side a wake-up, where a parked worker thread is woken through the kernel
/// (several microseconds, against a few hundred nanoseconds per message). The yields are few
/// and bounded: an idle receiver still parks at once for all that matters.
pub(crate) async fn take_parked(
    store: &(impl MessageStore + ?Sized),
    parking: Parking<'_>,
    select: Option<&dyn Select>,
    max: usize,
    into: &mut VecDeque<Message>,
) -> bool {
    for _ in 0..SPINS {
        tokio::task::yield_now().await;
        match store.try_take(select, max, into) {
            Take::Taken => return true,
            Take::Closed => return false,
            Take::Empty => {}
        }
    }
    let _selective = parking
        .selective
        .filter(|_| select.is_some())
        .map(Parked::new);
    let parked = Parked::new(parking.parked);
    loop {
        let notified = parking.readable.notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        if let Some(woken) = parking.woken {
            woken.store(false, Ordering::SeqCst);
        }
        match store.try_take(select, max, into) {
            Take::Taken => break,
            Take::Closed => return false,
            Take::Empty => notified.await,
        }
    }
    // No longer parked (nor registered: `notified` is gone): a receiver still parked may be
    // one the burst this one was woken for did not wake.
    drop(parked);
    if parking.passes_on && parking.parked.load(Ordering::SeqCst) > 0 {
        parking.readable.notify_one();
    }
    true
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::Push;
    use crate::store::memory::{Overflow, Queue};

    fn one_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    }

    /// A receiver on `queue`, taking one message: whether it got one, and how many.
    fn taker(queue: &Arc<Queue>) -> tokio::task::JoinHandle<(bool, usize)> {
        let queue = queue.clone();
        tokio::spawn(async move {
            let mut into = VecDeque::new();
            let Some(parking) = queue.parking() else {
                return (false, 0);
            };
            let took = take_parked(&*queue, parking, None, 1, &mut into).await;
            (took, into.len())
        })
    }

    fn parked(queue: &Queue) -> usize {
        queue
            .parking()
            .map_or(usize::MAX, |p| p.parked.load(Ordering::SeqCst))
    }

    #[test]
    fn a_receiver_finds_a_message_stored_while_it_gave_way_without_parking() {
        one_thread().block_on(async {
            let queue = Arc::new(Queue::new(8, Overflow::Backpressure));
            let taking = taker(&queue);
            // Runs after the taker's first look (tasks run in the order they were woken).
            let pushing = {
                let queue = queue.clone();
                tokio::spawn(async move {
                    let parked_then = parked(&queue);
                    (parked_then, queue.try_push(Message::new("x")))
                })
            };
            let (parked_then, pushed) = pushing.await.expect("pusher");
            assert_eq!(parked_then, 0, "the receiver gave way instead of parking");
            assert!(matches!(pushed, Push::Stored));
            assert_eq!(taking.await.expect("taker"), (true, 1));
        });
    }

    #[test]
    fn a_receiver_that_keeps_finding_nothing_parks_and_is_woken() {
        one_thread().block_on(async {
            let queue = Arc::new(Queue::new(8, Overflow::Backpressure));
            let taking = taker(&queue);
            for _ in 0..4 * SPINS {
                tokio::task::yield_now().await;
            }
            assert_eq!(parked(&queue), 1, "parked after giving way {SPINS} times");
            assert!(matches!(queue.try_push(Message::new("x")), Push::Stored));
            assert_eq!(taking.await.expect("taker"), (true, 1));
            assert_eq!(parked(&queue), 0);
        });
    }
}
