//! `rabbitmq-out`: messages are published to a RabbitMQ exchange, each acked once the broker
//! confirmed it.

use eip_adapters::amqp::{AmqpOutbound, AmqpOutboundConfig, ExchangeDeclaration, RoutingKey};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{BROKER, url};
use crate::diagnostic::Check;
use crate::kind::bridge;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};
use crate::template;

/// `rabbitmq-out`
pub(crate) static OUTBOUND: Kind = Kind {
    id: AdapterKind::bridge("rabbitmq-out", Direction::Outbound),
    feature: "amqp",
    keys: &[
        BROKER,
        &[
            "exchange",
            "routing-key",
            "declare-exchange",
            "durable",
            "confirm-timeout",
        ],
    ],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let url = url(check, settings)?;
    let exchange = settings
        .text(check, "exchange")
        .map_or(String::new(), |e| e.value);
    let mut config = AmqpOutboundConfig::new(url.0, exchange);
    let help = "a fixed routing key, `{subject}` for each message's subject, or a template \
                such as `orders.{$.region}` (see the book's Templates page)";
    if let Some(key) = settings.text(check, "routing-key")
        && let Some(routing_key) = template::setting(
            check,
            settings,
            "routing-key",
            &key,
            RoutingKey::SYNTAX,
            RoutingKey::new,
            help,
        )
    {
        config.routing_key = routing_key;
    }
    if let Some(kind) = settings.one_of(
        check,
        "declare-exchange",
        &[
            ("topic", "topic"),
            ("direct", "direct"),
            ("fanout", "fanout"),
            ("headers", "headers"),
        ],
    ) {
        config.declare = Some(ExchangeDeclaration {
            kind: kind.to_owned(),
            durable: settings.boolean(check, "durable").unwrap_or(true),
        });
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "confirm-timeout") {
        config.confirm_timeout = d;
    }
    Some(Box::new(config))
}

impl AdapterConfig for AmqpOutboundConfig {
    fn endpoint(&self) -> String {
        format!("{} exchange {}", self.url.redacted(), self.exchange)
    }

    fn connect<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let publisher = AmqpOutbound::new(self.clone());
            publisher.connect().await?;
            Ok(bridge::outbound(publisher))
        })
    }
}
