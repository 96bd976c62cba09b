//! `mqtt-out`: messages are published to MQTT topics at QoS 1 (by default each message's
//! subject, its dots as slashes).

use eip_adapters::mqtt::{MqttOutbound, MqttOutboundConfig, TopicTemplate};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{BROKER, address, broker, with_password};
use crate::diagnostic::Check;
use crate::kind::bridge;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};
use crate::template;

/// `mqtt-out`
pub(crate) static OUTBOUND: Kind = Kind {
    id: AdapterKind::bridge("mqtt-out", Direction::Outbound),
    feature: "mqtt",
    keys: &[BROKER, &["topic", "retain", "ack-timeout", "in-flight"]],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let broker = broker(check, settings);
    let topic = match settings.text(check, "topic") {
        Some(text) => template::setting(
            check,
            settings,
            "topic",
            &text,
            TopicTemplate::SYNTAX,
            TopicTemplate::new,
            "an MQTT topic, where `{subject}` is each message's subject with its dots as slashes \
             (see the book's Templates page for every placeholder)",
        ),
        None => TopicTemplate::parse("{subject}").ok(),
    };
    let (broker, client_id) = broker?;
    let mut config = MqttOutboundConfig::new(broker, client_id, topic?);
    if let Some(retain) = settings.boolean(check, "retain") {
        config.retain = retain;
    }
    if let Some(d) = settings.positive_duration(check, "ack-timeout") {
        config.ack_timeout = d;
    }
    if let Some(n) = settings.whole(check, "in-flight", 1) {
        config.in_flight = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Some(Box::new(config))
}

impl AdapterConfig for MqttOutboundConfig {
    fn endpoint(&self) -> String {
        format!("{} topic {}", address(&self.broker), self.topic.as_str())
    }

    fn connect<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let mut config = self.clone();
            config.broker = with_password(&config.broker)?;
            let publisher = MqttOutbound::connect(config).await?;
            Ok(bridge::outbound(publisher))
        })
    }
}
