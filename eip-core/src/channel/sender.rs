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
use crate::endpoint::PauseGate;
use crate::message::Message;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A channel's send side as a `tower::Service<Message>`.
pub struct ChannelSender {
    channel: Channel,
    ready: Option<BoxFuture<()>>,
    gate: Option<PauseGate>,
    resumed: Option<BoxFuture<()>>,
}

impl ChannelSender {
    pub(crate) fn new(channel: Channel) -> Self {
        ChannelSender {
            channel,
            ready: None,
            gate: None,
            resumed: None,
        }
    }

    /// A sender that is not ready while `gate`'s [`PauseSwitch`](crate::endpoint::PauseSwitch)
    /// is paused: what feeds a channel through it (an inbound adapter) waits, and takes up
    /// again where it stopped once resumed. A call made while ready still sends.
    pub fn pause_gate(mut self, gate: PauseGate) -> Self {
        self.gate = Some(gate);
        self
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
        ChannelSender {
            gate: self.gate.clone(),
            ..ChannelSender::new(self.channel.clone())
        }
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
        if let Some(gate) = &self.gate
            && self.resumed.is_none()
            && gate.is_paused()
        {
            self.resumed = Some(Box::pin(gate.resumed()));
        }
        if let Some(resumed) = self.resumed.as_mut() {
            match resumed.as_mut().poll(cx) {
                Poll::Ready(()) => self.resumed = None,
                Poll::Pending => return Poll::Pending,
            }
        }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tower::{Service, ServiceExt};

    use crate::channel::PointToPoint;
    use crate::endpoint::PauseSwitch;
    use crate::message::Message;

    #[tokio::test]
    async fn a_paused_sender_is_not_ready_until_resumed() {
        let channel = PointToPoint::new("paused.sender", 8).expect("a channel");
        let switch = PauseSwitch::new();
        let mut sender = crate::channel::Channel::from(channel.clone())
            .sender()
            .pause_gate(switch.gate());
        assert!(switch.pause());
        let waited = tokio::time::timeout(Duration::from_millis(50), sender.ready()).await;
        assert!(waited.is_err(), "a paused sender is not ready");
        assert_eq!(channel.stats().depth, 0);

        let mut clone = sender.clone();
        assert!(switch.resume());
        sender.ready().await.expect("ready once resumed");
        sender.call(Message::new("one")).await.expect("sent");
        clone
            .ready()
            .await
            .expect("its clone has the same gate, resumed");
        clone.call(Message::new("two")).await.expect("sent");
        assert_eq!(channel.stats().depth, 2);
    }

    #[tokio::test]
    async fn a_sender_whose_switch_is_gone_is_not_held() {
        let channel = PointToPoint::new("gone.switch", 8).expect("a channel");
        let switch = PauseSwitch::new();
        let gate = switch.gate();
        switch.pause();
        drop(switch);
        let mut sender = crate::channel::Channel::from(channel)
            .sender()
            .pause_gate(gate);
        tokio::time::timeout(Duration::from_secs(5), sender.ready())
            .await
            .expect("not held by a switch nobody can resume")
            .expect("ready");
    }
}
