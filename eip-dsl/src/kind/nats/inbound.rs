//! `nats-in`: a JetStream durable consumer feeds the channel; bridges with one consumer name
//! share its messages.

use eip_adapters::env::redact_url;
use eip_adapters::nats::{JetStreamSource, JetStreamSourceConfig};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{SERVER, stream, url};
use crate::diagnostic::Check;
use crate::kind::bridge::Subscription;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `nats-in`
pub(crate) static INBOUND: Kind = Kind {
    id: AdapterKind::bridge("nats-in", Direction::Inbound),
    feature: "nats",
    keys: &[
        &["to", "consumer", "filter-subject", "ack-wait", "window"],
        SERVER,
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
    let stream = stream(check, settings, true);
    let consumer = settings.required_text(
        check,
        "consumer",
        "add `consumer: NAME`, the durable consumer (bridges with one name share its messages)",
    );
    let mut config = JetStreamSourceConfig::new(url?, stream??, consumer?.value);
    config.filter_subject = settings.text(check, "filter-subject").map(|s| s.value);
    if let Some(d) = settings.positive_duration(check, "ack-wait") {
        config.ack_wait = d;
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    Some(Box::new(Subscription::read(check, settings, config, 64)))
}

impl AdapterConfig for Subscription<JetStreamSourceConfig> {
    fn endpoint(&self) -> String {
        format!(
            "{} stream {} consumer {}",
            redact_url(&self.source.url),
            self.source.stream.name,
            self.source.consumer
        )
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        self.connect_bridge(site, JetStreamSource::new)
    }
}
