//! The pending answer of a write: a future that resolves once the commit holding the write is
//! fsynced, or with the error that failed it (or refused it before it reached the committer).
//!
//! Every write of the store hands its work to the committer at once and returns a [`Ticket`]:
//! an append ([`AppendTicket`], the record's sequence number), a batch ([`BatchTicket`], the
//! sequence numbers of its appends), a key table's put and remove (`Ticket<()>`) and expiry
//! (`Ticket<u64>`, how many entries it removed). Dropping a ticket never withdraws the write.
//! A ticket works from any runtime, or none.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::StoreError;

/// The pending result of a write: resolves once the commit holding it is fsynced, or with the
/// error that failed (or refused) it. Dropping it never withdraws the write; it works from any
/// runtime, or none.
#[derive(Debug)]
#[must_use = "the write is made either way; the ticket tells when it is durable"]
pub struct Ticket<T> {
    state: State<T>,
    dir: PathBuf,
}

#[derive(Debug)]
enum State<T> {
    Waiting(oneshot::Receiver<Result<T, StoreError>>),
    /// Refused before it reached the committer; taken by the first poll.
    Refused(Option<StoreError>),
}

/// The ticket of [`QueueLog::append`](crate::QueueLog::append): the record's sequence number.
pub type AppendTicket = Ticket<u64>;

/// The ticket of [`Batch::commit`](crate::Batch::commit): the sequence numbers of the batch's
/// appends, in the order they were added.
pub type BatchTicket = Ticket<Vec<u64>>;

impl<T> Ticket<T> {
    /// A ticket answered through `receiver` by the committer.
    pub(crate) fn waiting(
        receiver: oneshot::Receiver<Result<T, StoreError>>,
        dir: PathBuf,
    ) -> Self {
        Ticket {
            state: State::Waiting(receiver),
            dir,
        }
    }

    /// A ticket that resolves with `error` at once.
    pub(crate) fn refused(error: StoreError, dir: PathBuf) -> Self {
        Ticket {
            state: State::Refused(Some(error)),
            dir,
        }
    }
}

impl<T> Future for Ticket<T> {
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let closed = || StoreError::Closed {
            dir: this.dir.clone(),
        };
        match &mut this.state {
            State::Waiting(receiver) => Pin::new(receiver)
                .poll(cx)
                .map(|outcome| outcome.unwrap_or_else(|_| Err(closed()))),
            State::Refused(error) => Poll::Ready(Err(error.take().unwrap_or_else(closed))),
        }
    }
}

/// Where the committer sends the answer of a batch: its appends' sequence numbers, or why it
/// failed. A put or a remove of a key table is a batch of one whose answer drops the numbers.
pub(crate) type Reply = Box<dyn FnOnce(Result<Vec<u64>, StoreError>) + Send>;
