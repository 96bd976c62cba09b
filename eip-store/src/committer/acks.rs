//! Acks handed to the committer without waking it, and how the committer waits for work.
//!
//! An ack is lazy: it rides with the next round, or is committed on its own (without an
//! fsync) within [`ACK_DELAY`]. Sending each ack through the committer's channel woke the
//! committer once per ack only for it to wait for company: with one message in flight, the
//! consumer's ack woke the committer, which went back to sleep, and the next send woke it again
//! (two hand-offs to the committer thread per message, on the path of the next send).
//!
//! So an ack goes into an [`AckList`] while the committer is awake or waits with a deadline of
//! at most [`ACK_DELAY`]: every round takes the acks listed since the last one (after the jobs
//! that woke it, so a flush makes every ack before it durable), and a wait that ends with acks
//! listed commits them. Only while the committer sleeps without a deadline (nothing due, not
//! even a checkpoint) does an ack go through the channel as a job, to wake it. The list and
//! the committer's "asleep" flag share one lock, so no ack is listed while the committer
//! sleeps without a deadline.

use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{ACK_DELAY, Committer, IDLE_CHECKPOINT, Job, MAX_BATCH};
use crate::queue::QueueState;

/// How long the committer looks for the next job before it sleeps (see
/// [`Committer::look_a_while`]).
const LOOK: Duration = Duration::from_micros(150);

/// Acks waiting for the committer's next round.
#[derive(Default)]
pub(crate) struct AckList {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    acks: Vec<(Arc<QueueState>, u64)>,
    /// The committer sleeps without a deadline: an ack must wake it (through the channel).
    asleep: bool,
}

impl AckList {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A Vec and a flag: consistent whatever panicked while holding the lock
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lists the ack of `seq` in `queue` for the committer's next round; false if the
    /// committer sleeps without a deadline, when the ack must be sent as a job instead.
    pub(crate) fn list(&self, queue: &Arc<QueueState>, seq: u64) -> bool {
        let mut inner = self.lock();
        if inner.asleep {
            return false;
        }
        inner.acks.push((queue.clone(), seq));
        true
    }
}

/// What a wait of the committer brought.
pub(super) enum Woken {
    /// A job.
    Job(Job),
    /// Nothing, before the deadline (listed acks may be waiting).
    Timeout,
    /// The channel closed: the store is closing.
    Closed,
}

impl Committer {
    /// Waits for the next job: until `acks_since + ACK_DELAY` when acks wait for company; in
    /// steps of at most [`ACK_DELAY`] (listed acks are committed at each step) until
    /// [`IDLE_CHECKPOINT`] after `idle_since` when a checkpoint is due, at which point the
    /// checkpoint is recorded; else without a deadline.
    pub(super) fn wait(&mut self, acks_since: Option<Instant>, idle_since: Instant) -> Woken {
        let deadline = match acks_since {
            Some(since) => since + ACK_DELAY,
            None if self.checkpoint_due => {
                let checkpoint_at = idle_since + IDLE_CHECKPOINT;
                let now = Instant::now();
                if now >= checkpoint_at {
                    if !self.acks.lock().acks.is_empty() {
                        return Woken::Timeout;
                    }
                    self.checkpoint();
                    return self.wait(None, idle_since);
                }
                (now + ACK_DELAY).min(checkpoint_at)
            }
            None => return self.sleep(),
        };
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.jobs.recv_timeout(wait) {
            Ok(job) => Woken::Job(job),
            Err(RecvTimeoutError::Timeout) => Woken::Timeout,
            Err(RecvTimeoutError::Disconnected) => Woken::Closed,
        }
    }

    /// Looks for the next job for up to [`LOOK`], giving the core away between looks: what the
    /// committer does after a round, before it waits. With one message in flight the next
    /// send comes within some tens of microseconds of the answer, and a committer that finds
    /// it so is not woken through the kernel (several microseconds more on the path of every
    /// message). Measured at window 1 on a 2-core guest: 50 µs caught fewer sends than 150 µs;
    /// see the book's benchmarks.
    pub(super) fn look_a_while(&mut self) -> Option<Woken> {
        let until = Instant::now() + LOOK;
        loop {
            match self.jobs.try_recv() {
                Ok(job) => return Some(Woken::Job(job)),
                Err(TryRecvError::Disconnected) => return Some(Woken::Closed),
                Err(TryRecvError::Empty) if Instant::now() < until => std::thread::yield_now(),
                Err(TryRecvError::Empty) => return None,
            }
        }
    }

    /// Sleeps until a job comes, unless acks are listed; acks that come meanwhile come as jobs.
    fn sleep(&mut self) -> Woken {
        {
            let mut inner = self.acks.lock();
            if !inner.acks.is_empty() {
                return Woken::Timeout;
            }
            inner.asleep = true;
        }
        let woken = match self.jobs.recv() {
            Ok(job) => Woken::Job(job),
            Err(_) => Woken::Closed,
        };
        self.acks.lock().asleep = false;
        woken
    }

    /// Adds to `batch` the acks listed, then the job that woke the committer (if any), then
    /// the jobs queued meanwhile, up to [`MAX_BATCH`] jobs in all; false once the channel has
    /// closed. The acks come first, as they would have come through the channel: each was
    /// listed before the jobs gathered with it were taken (a flush among them makes them
    /// durable), and every answer of the round is sent after their effect on memory.
    pub(super) fn gather(&mut self, batch: &mut Vec<Job>, woken: Option<Job>) -> bool {
        {
            let mut inner = self.acks.lock();
            let room = MAX_BATCH.saturating_sub(batch.len() + usize::from(woken.is_some()));
            let take = inner.acks.len().min(room);
            batch.extend(
                inner
                    .acks
                    .drain(..take)
                    .map(|(queue, seq)| Job::Ack { queue, seq }),
            );
        }
        batch.extend(woken);
        while batch.len() < MAX_BATCH {
            match self.jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        true
    }
}
