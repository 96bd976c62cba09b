//! The splitter as a service: every part passed on, in order, before the original is done.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use eip_core::{Message, MessageId};
use tower::{Service, ServiceExt};

use super::{Split, SplitError, SplitLayer};
use crate::format::Malformed;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Splits each message and passes its parts to the inner service one at a time, in order;
/// completes when every part was accepted.
///
/// ```
/// use eip_core::{Message, channel::PointToPoint};
/// use eip_steps::split::{Split, SplitService};
/// use tower::{Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let lines = PointToPoint::new("lines", 10).unwrap();
/// let mut split = SplitService::new(lines.sender(), Split::json_lines());
/// let outcome = split.ready().await.unwrap().call(Message::new("1\n[2]\n{bad\n")).await.unwrap();
/// assert_eq!(outcome.accepted.len(), 2);
/// assert_eq!(outcome.malformed[0].line, 3);
/// assert_eq!(lines.receiver().try_recv().unwrap().message().payload_str(), Some("1"));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SplitService<S> {
    inner: S,
    split: Split,
}

/// What became of a split message: every part accepted, and the records that could not be
/// read (for the invalid message channel).
#[derive(Debug, Clone, PartialEq)]
pub struct SplitOutcome<R> {
    /// The original message's id (the parts' correlation id).
    pub original: MessageId,
    /// The inner service's response to each part, in order.
    pub accepted: Vec<R>,
    /// The records that could not be read, in order, with their line numbers.
    pub malformed: Vec<Malformed>,
}

impl<S> SplitService<S> {
    /// Splits as `split` says in front of `inner`.
    pub fn new(inner: S, split: Split) -> Self {
        SplitService { inner, split }
    }

    /// A layer that puts this splitter in front of a service.
    pub fn layer(split: Split) -> SplitLayer {
        SplitLayer::new(split)
    }

    /// The split.
    pub fn split(&self) -> &Split {
        &self.split
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, for change.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<Message> for SplitService<S>
where
    S: Service<Message> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = SplitOutcome<S::Response>;
    type Error = SplitError<S::Error>;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(SplitError::NotReady)
    }

    fn call(&mut self, original: Message) -> Self::Future {
        let parts = self.split.parts_one_by_one(&original);
        // The service made ready by `poll_ready` takes the first part; a clone stands in.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let mut outcome = SplitOutcome {
                original: original.id(),
                accepted: Vec::with_capacity(parts.size_hint().0),
                malformed: Vec::new(),
            };
            let mut number = 0;
            for part in parts {
                let part = match part {
                    Ok(part) => part,
                    Err(malformed) => {
                        outcome.malformed.push(malformed);
                        continue;
                    }
                };
                number += 1;
                let fail = |source| SplitError::Part {
                    sequence_number: number,
                    source,
                };
                if number > 1 {
                    inner.ready().await.map_err(fail)?;
                }
                outcome.accepted.push(inner.call(part).await.map_err(fail)?);
            }
            Ok(outcome)
        })
    }
}
