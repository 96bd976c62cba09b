//! The outbound half of a bridge: a broker's publisher as a `tower::Service<Message>`.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use eip_core::Message;
use futures::future::BoxFuture;

use super::{BridgeError, ConnectionHealth};

/// How one broker publishes a message and waits for it to be confirmed.
pub trait Publisher: Send + Sync + 'static {
    /// What the broker answered for one publish (nothing, a stream sequence, an entry id).
    type Receipt: Send + 'static;

    /// Publishes `msg` and answers once the broker confirmed it.
    fn publish(
        &self,
        msg: &Message,
    ) -> impl Future<Output = Result<Self::Receipt, BridgeError>> + Send;

    /// The destination in a few words, for `Debug` and logs: `rabbitmq at … exchange orders`.
    fn describe(&self) -> String;

    /// The record of its connection's ups and downs, if it keeps one.
    fn health(&self) -> Option<ConnectionHealth> {
        None
    }
}

/// A broker's [`Publisher`] as an outbound adapter. Each broker module names its own:
/// [`AmqpOutbound`](crate::amqp::AmqpOutbound),
/// [`JetStreamOutbound`](crate::nats::JetStreamOutbound), and so on.
///
/// Every broker publishes its own way (a publisher confirm, a JetStream ack, a PUBACK, the
/// `XADD` reply), and each says so by implementing [`Publisher`]: publish one message, answer
/// once the broker confirmed it. [`Outbound`] is what the rest of eip drives: a cheap-to-clone
/// handle on that publisher (clones share its connection) and a `tower::Service` whose
/// `poll_ready` is always ready (publishes in flight are bounded by the
/// [`Consumer`](eip_core::endpoint::Consumer)'s concurrency, or by the publisher itself) and
/// whose call answers `Ok` only once the broker confirmed. `Err` is a [`BridgeError`]: the
/// consumer retries it with the channel's redelivery policy, or dead-letters it at once when
/// [`BridgeError::is_permanent`].
pub struct Outbound<P> {
    publisher: Arc<P>,
}

impl<P> Outbound<P> {
    /// The outbound adapter publishing with `publisher`.
    pub fn from_publisher(publisher: P) -> Self {
        Outbound {
            publisher: Arc::new(publisher),
        }
    }

    /// The publisher.
    pub fn get_ref(&self) -> &P {
        &self.publisher
    }
}

impl<P: Publisher> Outbound<P> {
    /// The record of its connection's ups and downs, if its publisher keeps one.
    pub fn health(&self) -> Option<ConnectionHealth> {
        self.publisher.health()
    }

    /// Publishes `msg` and answers once the broker confirmed it (what a call does).
    pub async fn publish(&self, msg: &Message) -> Result<P::Receipt, BridgeError> {
        self.publisher.publish(msg).await
    }
}

impl<P> Clone for Outbound<P> {
    fn clone(&self) -> Self {
        Outbound {
            publisher: self.publisher.clone(),
        }
    }
}

impl<P: Publisher> std::fmt::Debug for Outbound<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Outbound")
            .field(&self.publisher.describe())
            .finish()
    }
}

impl<P: Publisher> tower::Service<Message> for Outbound<P> {
    type Response = P::Receipt;
    type Error = BridgeError;
    type Future = BoxFuture<'static, Result<P::Receipt, BridgeError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BridgeError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        let publisher = self.publisher.clone();
        Box::pin(async move { publisher.publish(&msg).await })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tower::{Service, ServiceExt};

    use super::*;

    struct Counting(AtomicUsize);

    impl Publisher for Counting {
        type Receipt = usize;

        async fn publish(&self, msg: &Message) -> Result<usize, BridgeError> {
            match msg.payload().as_ref() {
                b"refuse" => Err(BridgeError::Refused {
                    broker: "test".into(),
                    what: "a publish".into(),
                    reason: "no".into(),
                    permanent: true,
                }),
                _ => Ok(self.0.fetch_add(1, Ordering::SeqCst) + 1),
            }
        }

        fn describe(&self) -> String {
            "counting".into()
        }
    }

    #[tokio::test]
    async fn clones_share_the_publisher_and_a_call_answers_what_it_answered() {
        let mut outbound = Outbound::from_publisher(Counting(AtomicUsize::new(0)));
        let mut clone = outbound.clone();
        let first = outbound
            .ready()
            .await
            .unwrap()
            .call(Message::new("a"))
            .await;
        let second = clone.ready().await.unwrap().call(Message::new("b")).await;
        assert_eq!((first.unwrap(), second.unwrap()), (1, 2));
        let refused = outbound.call(Message::new("refuse")).await.unwrap_err();
        assert!(refused.is_permanent());
        assert_eq!(format!("{outbound:?}"), "Outbound(\"counting\")");
    }
}
