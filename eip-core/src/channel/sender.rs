//! The send side of a channel as a `tower::Service<Message>`.
//!
//! [`ChannelSender`] is ready when the channel can take a message now (every subscription, for
//! publish-subscribe) and registers for a wake-up when it can not: the channel's capacity is the
//! service's backpressure, so `tower`'s `Buffer`, `ConcurrencyLimit`, `RateLimit`, `Timeout` and
//! `Retry` layers compose with it unchanged. Its future completes when the channel has accepted
//! the message. Readiness is a hint, not a reservation: a call that loses a race for the last
//! slot waits inside its future, so memory stays bounded either way.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::error::SendError;
use super::{Channel, Outcome};
use crate::message::Message;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A channel's send side as a `tower::Service<Message>`.
pub struct ChannelSender {
    channel: Channel,
    ready: Option<BoxFuture<()>>,
}

impl ChannelSender {
    pub(crate) fn new(channel: Channel) -> Self {
        ChannelSender {
            channel,
            ready: None,
        }
    }

    /// The channel it sends to.
    pub fn get_ref(&self) -> &Channel {
        &self.channel
    }

    /// The channel it sends to.
    pub fn into_inner(self) -> Channel {
        self.channel
    }
}

impl Clone for ChannelSender {
    fn clone(&self) -> Self {
        ChannelSender::new(self.channel.clone())
    }
}

impl std::fmt::Debug for ChannelSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelSender")
            .field("channel", &self.channel.name())
            .finish()
    }
}

impl tower::Service<Message> for ChannelSender {
    type Response = Outcome;
    type Error = SendError;
    type Future = BoxFuture<Result<Outcome, SendError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SendError>> {
        loop {
            if let Some(ready) = self.ready.as_mut() {
                match ready.as_mut().poll(cx) {
                    Poll::Ready(()) => self.ready = None,
                    Poll::Pending => return Poll::Pending,
                }
            }
            // A closed channel is "ready": the call then reports the closure with the message.
            if self.channel.accepts_now() {
                return Poll::Ready(Ok(()));
            }
            let channel = self.channel.clone();
            self.ready = Some(Box::pin(async move { channel.writable().await }));
        }
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let channel = self.channel.clone();
        Box::pin(async move { channel.send(msg).await })
    }
}
