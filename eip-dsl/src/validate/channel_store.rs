//! `store:` of a channel: the broker that keeps its messages, so that every process attached
//! shares them (see the `store` module of eip-adapters).

use eip_core::channel::{ChannelKind, Overflow};

use super::Check;
use crate::diagnostic::Problem;
use crate::plan::{BrokerPlace, BrokerStorePlan};
use crate::settings::{Settings, broker_url};
use crate::spec::{ChannelSpec, SettingValue};

const BROKERS: &[&str] = &["rabbitmq", "jetstream"];
const RABBITMQ: &[&str] = &["url", "queue", "exchange", "publish-window", "retry-for"];
const JETSTREAM: &[&str] = &[
    "url",
    "stream",
    "subject",
    "ack-wait",
    "publish-window",
    "retry-for",
];
const STORE_HELP: &str = "write `store: {rabbitmq: {url: ..., queue: ...}}` or `store: {jetstream: {url: ..., stream: ...}}`";

/// The broker store of the channel `name` (whose entry's key path is `path`), checked; `None`
/// when it has none or it is wrong (reported).
pub(super) fn check_store(
    check: &mut Check<'_>,
    name: &str,
    kind: ChannelKind,
    overflow: Option<Overflow>,
    channel: &ChannelSpec,
    path: &str,
) -> Option<BrokerStorePlan> {
    let store = channel.store.as_ref()?;
    let key = format!("{path}.store");
    let SettingValue::Map(items) = &store.value.value else {
        check.report(
            Problem::new(
                format!(
                    "`store` of channel `{name}` must be a mapping naming one broker, found {}",
                    store.value.value.describe()
                ),
                store.value.at,
            )
            .with_key(key)
            .with_help(STORE_HELP),
        );
        return None;
    };
    let outer = Settings {
        path: key.clone(),
        at: store.key.at,
        what: format!("`store` of channel `{name}`"),
        items,
        damaged: false,
    };
    let before = check.problems.len();
    outer.check_keys(check, BROKERS);
    if check.problems.len() != before {
        return None;
    }
    if items.len() != 1 {
        outer.report_entry(
            check,
            format!("names {} brokers; a channel lives in one", items.len()),
            Some(STORE_HELP),
        );
        return None;
    }
    if let Some(durable) = channel.durable.as_ref().filter(|d| d.value) {
        check.report(
            Problem::new(
                format!(
                    "channel `{name}` has `durable: true` and a `store`: the first keeps it in \
                     the embedded store, the second in a broker"
                ),
                durable.at,
            )
            .with_key(format!("{path}.durable"))
            .with_help("choose one: a broker keeps its messages across restarts too"),
        );
    }
    if overflow == Some(Overflow::DropOldest) {
        outer.report_entry(
            check,
            "`overflow: drop-oldest` is not available for a channel kept in a broker".to_owned(),
            Some("remove `overflow`: publishers wait for the broker's confirm"),
        );
    }
    if !broker_built(check, &outer) {
        return None;
    }
    let before = check.problems.len();
    let plan = if outer.get("rabbitmq").is_some() {
        let settings = outer.map(check, "rabbitmq", RABBITMQ)?;
        rabbitmq(check, &settings, name, kind)
    } else {
        let settings = outer.map(check, "jetstream", JETSTREAM)?;
        jetstream(check, &settings, name)
    };
    (check.problems.len() == before).then_some(plan).flatten()
}

/// Whether the broker `outer` names is built into this `eip`; if not, reports the feature.
fn broker_built(check: &mut Check<'_>, outer: &Settings<'_>) -> bool {
    let (broker, feature, built) = if outer.get("rabbitmq").is_some() {
        ("rabbitmq", "amqp", cfg!(feature = "amqp"))
    } else {
        ("jetstream", "nats", cfg!(feature = "nats"))
    };
    if !built {
        outer.report_entry(
            check,
            format!("`{broker}` is not built into this eip: its cargo feature `{feature}` is off"),
            Some(&format!(
                "build eip with it: `cargo build -p eip-dsl --features {feature}` (the default builds every broker)"
            )),
        );
        return false;
    }
    true
}

fn limits(check: &mut Check<'_>, settings: &Settings<'_>, place: BrokerPlace) -> BrokerStorePlan {
    BrokerStorePlan {
        place,
        publish_window: settings
            .whole(check, "publish-window", 1)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        retry_for: settings.duration(check, "retry-for"),
    }
}

fn rabbitmq(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    name: &str,
    kind: ChannelKind,
) -> Option<BrokerStorePlan> {
    let help = "`amqp://USER:PASSWORD@HOST:5672/VHOST` (`%2f` is the default vhost); name the \
                password as `${VARIABLE}`";
    let url = broker_url(check, settings, "amqp://", "RabbitMQ", help);
    let (own, other, why) = match kind {
        ChannelKind::PointToPoint => (
            "queue",
            "exchange",
            "a point-to-point channel lives in a queue: write `queue:` (its name by default)",
        ),
        ChannelKind::PublishSubscribe => (
            "exchange",
            "queue",
            "a publish-subscribe channel is published through a fanout exchange, and each \
             subscription is a queue of its own: write `exchange:` (its name by default)",
        ),
    };
    if settings.get(other).is_some() {
        settings.report_at(
            check,
            other,
            &format!("`{other}` does not fit `{name}`"),
            Some(why),
        );
    }
    let destination = settings
        .text(check, own)
        .map_or_else(|| name.to_owned(), |t| t.value);
    let place = match kind {
        ChannelKind::PointToPoint => BrokerPlace::RabbitMqQueue {
            url: url?,
            queue: destination,
        },
        ChannelKind::PublishSubscribe => BrokerPlace::RabbitMqExchange {
            url: url?,
            exchange: destination,
        },
    };
    Some(limits(check, settings, place))
}

/// The stream of a channel that names none: its name upper-cased, `.` and `-` as `_`.
fn default_stream(channel: &str) -> String {
    channel
        .chars()
        .map(|c| match c {
            '.' | '-' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

fn jetstream(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    name: &str,
) -> Option<BrokerStorePlan> {
    let help = "`nats://HOST:4222`, or `nats://USER:PASSWORD@HOST:4222`";
    let url = broker_url(check, settings, "nats://", "NATS", help);
    let stream = match settings.text(check, "stream") {
        Some(stream) => {
            let bad = stream.value.is_empty()
                || stream
                    .value
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '.' | '*' | '>'));
            if bad {
                settings.report_value(
                    check,
                    "stream",
                    &stream,
                    format!("`{}` can not name a stream", stream.value),
                    Some("a stream's name has no spaces, `.`, `*` or `>`: `ORDERS`, `sensor_readings`"),
                );
            }
            stream.value
        }
        None => default_stream(name),
    };
    let subject = settings.text(check, "subject").map(|subject| {
        if subject.value.is_empty()
            || subject.value.contains(char::is_whitespace)
            || subject
                .value
                .split('.')
                .any(|w| w.is_empty() || w == "*" || w == ">")
        {
            settings.report_value(
                check,
                "subject",
                &subject,
                format!("`{}` is not a subject to publish to", subject.value),
                Some("dot-separated words without wildcards: `eip.orders`"),
            );
        }
        subject.value
    });
    let ack_wait = settings.duration(check, "ack-wait");
    let place = BrokerPlace::JetStream {
        url: url?,
        stream,
        subject,
        ack_wait,
    };
    Some(limits(check, settings, place))
}

#[cfg(test)]
mod tests {
    use super::default_stream;

    #[test]
    fn a_channel_name_becomes_a_stream_name() {
        assert_eq!(default_stream("sensor.readings-eu"), "SENSOR_READINGS_EU");
    }
}
