//! `rabbitmq-in`: a RabbitMQ queue (declared and bound when asked) feeds the channel.

use eip_adapters::amqp::{AmqpSource, AmqpSourceConfig, QueueBinding};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{BROKER, url};
use crate::diagnostic::Check;
use crate::kind::bridge::Subscription;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction, Located};

/// `rabbitmq-in`
pub(crate) static INBOUND: Kind = Kind {
    id: AdapterKind::bridge("rabbitmq-in", Direction::Inbound),
    feature: "amqp",
    keys: &[
        &[
            "to",
            "queue",
            "declare",
            "exchange",
            "binding-keys",
            "window",
        ],
        BROKER,
    ],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let url = url(check, settings);
    let queue = settings.required_text(check, "queue", "add `queue: NAME`, the queue to consume");
    let mut config = AmqpSourceConfig::new(url?.0, queue?.value);
    if let Some(declare) = settings.boolean(check, "declare") {
        config.declare = declare;
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    let exchange = settings.text(check, "exchange");
    let keys = settings.list(check, "binding-keys");
    match (exchange, keys) {
        (Some(exchange), keys) => {
            let keys = keys.unwrap_or_else(|| vec![Located::new("#".to_owned())]);
            config.bindings = keys
                .into_iter()
                .map(|key| QueueBinding {
                    exchange: exchange.value.clone(),
                    key: key.value,
                })
                .collect();
        }
        (None, Some(keys)) => {
            if let Some(first) = keys.first() {
                settings.report_value(
                    check,
                    "binding-keys",
                    first,
                    "`binding-keys` without `exchange`: bound to what?".to_owned(),
                    Some("add `exchange: NAME`, the exchange the queue is bound to"),
                );
            }
            return None;
        }
        (None, None) => {}
    }
    Some(Box::new(Subscription::read(check, settings, config, 64)))
}

impl AdapterConfig for Subscription<AmqpSourceConfig> {
    fn endpoint(&self) -> String {
        format!("{} queue {}", self.source.url.redacted(), self.source.queue)
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        self.connect_bridge(site, |source| Ok(AmqpSource::new(source)))
    }
}
