//! `redis-in`: a Redis Streams consumer group feeds the channel; a consumer's pending entries
//! come back to it after a restart.

use eip_adapters::env::redact_url;
use eip_adapters::redis::{RedisStreamSource, RedisStreamSourceConfig};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{SERVER, url};
use crate::diagnostic::Check;
use crate::kind::bridge::Subscription;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `redis-in`
pub(crate) static INBOUND: Kind = Kind {
    id: AdapterKind::bridge("redis-in", Direction::Inbound),
    feature: "redis",
    keys: &[&["to", "group", "consumer", "claim-idle", "window"], SERVER],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let url = url(check, settings);
    let stream = settings.required_text(check, "stream", "add `stream: KEY`, the stream read");
    let group = settings.required_text(check, "group", "add `group: NAME`, the consumer group");
    let consumer = settings.required_text(
        check,
        "consumer",
        "add `consumer: NAME`, fixed and the bridge's own (its pending entries come back to it)",
    );
    let mut config =
        RedisStreamSourceConfig::new(url?, stream?.value, group?.value, consumer?.value);
    if let Some(d) = settings.positive_duration(check, "claim-idle") {
        config.claim_idle = Some(d);
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    Some(Box::new(Subscription::read(check, settings, config, 64)))
}

impl AdapterConfig for Subscription<RedisStreamSourceConfig> {
    fn endpoint(&self) -> String {
        format!(
            "{} stream {} group {}",
            redact_url(&self.source.url),
            self.source.stream,
            self.source.group
        )
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        self.connect_bridge(site, RedisStreamSource::new)
    }
}
