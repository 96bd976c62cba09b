//! `nats-out`: messages are published to a JetStream subject (by default each message's
//! subject).

use eip_adapters::env::redact_url;
use eip_adapters::nats::{JetStreamOutbound, JetStreamOutboundConfig, SubjectTemplate};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{SERVER, stream, url};
use crate::diagnostic::Check;
use crate::kind::bridge;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};
use crate::template;

/// `nats-out`
pub(crate) static OUTBOUND: Kind = Kind {
    id: AdapterKind::bridge("nats-out", Direction::Outbound),
    feature: "nats",
    keys: &[SERVER, &["subject", "publish-timeout"]],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let url = url(check, settings);
    let stream = stream(check, settings, false);
    let subject = match settings.text(check, "subject") {
        Some(text) => template::setting(
            check,
            settings,
            "subject",
            &text,
            SubjectTemplate::SYNTAX,
            SubjectTemplate::new,
            "a NATS subject, where `{subject}` is each message's subject (see the book's \
             Templates page for every placeholder)",
        ),
        None => SubjectTemplate::parse("{subject}").ok(),
    };
    let mut config = JetStreamOutboundConfig::new(url?, subject?);
    config.stream = stream?;
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "publish-timeout") {
        config.publish_timeout = d;
    }
    Some(Box::new(config))
}

impl AdapterConfig for JetStreamOutboundConfig {
    fn endpoint(&self) -> String {
        format!(
            "{} subject {}",
            redact_url(&self.url),
            self.subject.as_str()
        )
    }

    fn connect<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let publisher = JetStreamOutbound::new(self.clone())?;
            publisher.connect().await?;
            Ok(bridge::outbound(publisher))
        })
    }
}
