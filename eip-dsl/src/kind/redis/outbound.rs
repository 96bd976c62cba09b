//! `redis-out`: messages are appended to a Redis stream (`XADD`), its key filled from each
//! message.

use eip_adapters::env::redact_url;
use eip_adapters::redis::{RedisStreamOutbound, RedisStreamOutboundConfig, StreamKey};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{SERVER, url};
use crate::diagnostic::Check;
use crate::kind::bridge;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};
use crate::template;

/// `redis-out`
pub(crate) static OUTBOUND: Kind = Kind {
    id: AdapterKind::bridge("redis-out", Direction::Outbound),
    feature: "redis",
    keys: &[SERVER, &["max-len"]],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let url = url(check, settings);
    let stream = settings
        .required_text(
            check,
            "stream",
            "add `stream: KEY`; `{subject}` is each message's subject",
        )
        .and_then(|text| {
            template::setting(
                check,
                settings,
                "stream",
                &text,
                StreamKey::SYNTAX,
                StreamKey::new,
                "a stream key; `{subject}` is each message's subject (see the book's Templates \
                 page for every placeholder)",
            )
        });
    let mut config = RedisStreamOutboundConfig::new(url?, stream?);
    if let Some(n) = settings.whole(check, "max-len", 1) {
        config.max_len = Some(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    Some(Box::new(config))
}

impl AdapterConfig for RedisStreamOutboundConfig {
    fn endpoint(&self) -> String {
        format!("{} stream {}", redact_url(&self.url), self.stream.as_str())
    }

    fn connect<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let publisher = RedisStreamOutbound::new(self.clone())?;
            publisher.connect().await?;
            Ok(bridge::outbound(publisher))
        })
    }
}
