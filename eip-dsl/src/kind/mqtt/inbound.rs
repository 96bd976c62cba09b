//! `mqtt-in`: an MQTT subscription (QoS 1, a persistent session) feeds the channel.

use eip_adapters::mqtt::{MqttSource, MqttSourceConfig};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{BROKER, address, broker, with_password};
use crate::diagnostic::Check;
use crate::kind::bridge::Subscription;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `mqtt-in`
pub(crate) static INBOUND: Kind = Kind {
    id: AdapterKind::bridge("mqtt-in", Direction::Inbound),
    feature: "mqtt",
    keys: &[&["to", "filter", "session-expiry", "window"], BROKER],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let broker = broker(check, settings);
    let filter = settings.required_text(
        check,
        "filter",
        "add `filter: TOPIC/#`, the topics subscribed to",
    );
    let (broker, client_id) = broker?;
    let mut config = MqttSourceConfig::new(broker, client_id, filter?.value);
    if let Some(d) = settings.positive_duration(check, "session-expiry") {
        config.session_expiry = d;
    }
    // The receive maximum: 16 unless written.
    Some(Box::new(Subscription::read(check, settings, config, 16)))
}

impl AdapterConfig for Subscription<MqttSourceConfig> {
    fn endpoint(&self) -> String {
        format!(
            "{} filter {}",
            address(&self.source.broker),
            self.source.filter
        )
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let mut subscription = self.clone();
            subscription.source.broker = with_password(&self.source.broker)?;
            subscription
                .connect_bridge(site, |source| Ok(MqttSource::new(source)))
                .await
        })
    }
}
