//! RabbitMQ as a channel store: a point-to-point channel in a durable queue, a
//! publish-subscribe channel through a durable fanout exchange.

use std::sync::Arc;
use std::time::Duration;

use eip_core::message::Message;
use eip_core::store::{
    Backend, BackendError, MessageStore, Overflow, SUBSCRIPTION_SEPARATOR, StoreFailure, Waiting,
};
use futures::future::BoxFuture;

use super::broker::{self, BrokerStore, Limits, Publish, Reading};
use crate::amqp::{
    AmqpOutbound, AmqpOutboundConfig, AmqpSource, AmqpSourceConfig, AmqpUrl, ExchangeDeclaration,
    QueueBinding, RoutingKey,
};
use crate::bridge::BridgeError;

/// The channel stores of one channel in RabbitMQ; see the [module](super).
///
/// ```no_run
/// use std::sync::Arc;
/// use eip_adapters::store::RabbitMq;
/// use eip_core::channel::PointToPoint;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
/// // Every process building `orders` this way competes for the queue's messages.
/// let orders = PointToPoint::builder("orders")
///     .store(Arc::new(RabbitMq::queue(url, "orders")))
///     .build()?;
/// orders.send(eip_core::Message::new("one widget")).await?; // confirmed by RabbitMQ
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RabbitMq {
    url: AmqpUrl,
    shape: Shape,
    limits: Limits,
    connect_timeout: Duration,
}

#[derive(Debug, Clone)]
enum Shape {
    /// A point-to-point channel's durable queue.
    Queue(String),
    /// A publish-subscribe channel's durable fanout exchange.
    Exchange(String),
}

impl RabbitMq {
    /// A point-to-point channel in the durable queue `queue` (declared if missing): every
    /// process whose channel lives there competes for its messages.
    pub fn queue(url: impl Into<String>, queue: impl Into<String>) -> Self {
        RabbitMq::new(url, Shape::Queue(queue.into()))
    }

    /// A publish-subscribe channel published through the durable fanout exchange `exchange`
    /// (declared if missing); the durable subscription `audit` is the durable queue
    /// `EXCHANGE.audit` bound to it, and one that ends with its subscriber an exclusive queue.
    pub fn exchange(url: impl Into<String>, exchange: impl Into<String>) -> Self {
        RabbitMq::new(url, Shape::Exchange(exchange.into()))
    }

    fn new(url: impl Into<String>, shape: Shape) -> Self {
        RabbitMq {
            url: AmqpUrl(url.into()),
            shape,
            limits: Limits::default(),
            connect_timeout: Duration::from_secs(5),
        }
    }

    /// How many sends may wait for their confirms at once (at least 1).
    pub fn publish_window(mut self, window: usize) -> Self {
        self.limits.publish_window = window.max(1);
        self
    }

    /// How long a send keeps trying while RabbitMQ can not be reached.
    pub fn retry_for(mut self, wait: Duration) -> Self {
        self.limits.retry_for = wait;
        self
    }

    fn describe(&self, what: &str) -> String {
        format!("rabbitmq at {} {what}", self.url.redacted())
    }

    fn refused(&self, store: &str, why: String) -> BackendError {
        BackendError {
            store: store.to_owned(),
            location: self.location(),
            cause: StoreFailure::new(std::io::Error::other(why)),
        }
    }

    fn fanout() -> ExchangeDeclaration {
        ExchangeDeclaration {
            kind: "fanout".to_owned(),
            durable: true,
        }
    }

    fn publisher(&self, exchange: &str, key: &str) -> Arc<dyn Publish> {
        let mut config = AmqpOutboundConfig::new(self.url.0.clone(), exchange);
        config.routing_key = RoutingKey::Fixed(key.to_owned());
        config.connect_timeout = self.connect_timeout;
        config.broker_expiration = false;
        if exchange.is_empty() {
            config.declare_queue = Some(key.to_owned());
        } else {
            config.declare = Some(RabbitMq::fanout());
            config.mandatory = false;
        }
        Arc::new(AmqpOutbound::new(config))
    }

    fn source(&self, queue: &str) -> AmqpSourceConfig {
        let mut config = AmqpSourceConfig::new(self.url.0.clone(), queue);
        config.connect_timeout = self.connect_timeout;
        config.subject_header = false;
        config
    }
}

impl Publish for AmqpOutbound {
    fn publish<'a>(&'a self, msg: &'a Message) -> BoxFuture<'a, Result<(), BridgeError>> {
        Box::pin(AmqpOutbound::publish(self, msg))
    }
}

impl Backend for RabbitMq {
    fn is_durable(&self) -> bool {
        true
    }

    fn open(
        &self,
        name: &str,
        capacity: usize,
        _overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        let opened = match &self.shape {
            Shape::Queue(_) if name.contains(SUBSCRIPTION_SEPARATOR) => {
                return Err(self.refused(
                    name,
                    "a RabbitMQ queue keeps a point-to-point channel; a publish-subscribe \
                     channel lives behind an exchange"
                        .to_owned(),
                ));
            }
            Shape::Queue(queue) => BrokerStore::open(
                self.describe(&format!("queue `{queue}`")),
                capacity,
                Some(self.publisher("", queue)),
                Some((AmqpSource::new(self.source(queue)), Reading::OnDemand)),
                self.limits,
            ),
            Shape::Exchange(exchange) => BrokerStore::open(
                self.describe(&format!("exchange `{exchange}`")),
                capacity,
                Some(self.publisher(exchange, "")),
                None::<(AmqpSource, Reading)>,
                self.limits,
            ),
        };
        opened.map_err(|cause| BackendError {
            store: name.to_owned(),
            location: self.location(),
            cause,
        })
    }

    fn fans_out(&self) -> bool {
        matches!(self.shape, Shape::Exchange(_))
    }

    fn open_subscription(
        &self,
        channel: &str,
        name: Option<&str>,
        capacity: usize,
        _overflow: Overflow,
    ) -> Result<Arc<dyn MessageStore>, BackendError> {
        let Shape::Exchange(exchange) = &self.shape else {
            return Err(self.refused(
                channel,
                "a RabbitMQ queue has no subscriptions: a publish-subscribe channel lives \
                 behind an exchange"
                    .to_owned(),
            ));
        };
        let queue = match name {
            Some(name) => format!("{exchange}.{name}"),
            None => broker::passing_name(&format!("{exchange}.eip")),
        };
        let mut config = self.source(&queue);
        config.exclusive = name.is_none();
        config.exchanges = vec![(exchange.clone(), RabbitMq::fanout())];
        config.bindings = vec![QueueBinding {
            exchange: exchange.clone(),
            key: String::new(),
        }];
        BrokerStore::open(
            self.describe(&format!("queue `{queue}` bound to exchange `{exchange}`")),
            capacity,
            None,
            Some((AmqpSource::new(config), Reading::AtOnce)),
            self.limits,
        )
        .map_err(|cause| BackendError {
            store: format!("{channel}{SUBSCRIPTION_SEPARATOR}{}", name.unwrap_or("")),
            location: self.location(),
            cause,
        })
    }

    fn names(&self, _prefix: &str) -> Vec<String> {
        // Durable subscriptions are found again by subscribing under their names.
        Vec::new()
    }

    fn remove(&self, name: &str) -> Waiting<'_, Result<(), BackendError>> {
        let name = name.to_owned();
        Box::pin(async move {
            // Only a durable subscription's queue is removed: a channel's queue or exchange is
            // shared with other processes.
            let (Shape::Exchange(exchange), Some(subscription)) =
                (&self.shape, broker::subscription_of(&name))
            else {
                return Ok(());
            };
            let queue = format!("{exchange}.{subscription}");
            crate::amqp::delete_queue(&self.url, &queue, self.connect_timeout)
                .await
                .map_err(|e| self.refused(&name, e.to_string()))
        })
    }

    fn location(&self) -> String {
        match &self.shape {
            Shape::Queue(queue) => self.describe(&format!("queue `{queue}`")),
            Shape::Exchange(exchange) => self.describe(&format!("exchange `{exchange}`")),
        }
    }
}
