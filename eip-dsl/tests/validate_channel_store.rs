//! A channel kept in a broker in a flow file: `store: {rabbitmq: {...}}` or
//! `store: {jetstream: {...}}`, its defaults, and every way of writing it wrong, with
//! positions.

use std::time::Duration;

mod support {
    pub mod problems;
    pub mod validate;
}

use eip_dsl::plan::{BrokerPlace, BrokerStorePlan};
use support::problems::{at, help, only, problems};
use support::validate::load;

const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

fn broker(lines: &[&str], channel: &str) -> Option<BrokerStorePlan> {
    let plan = load(lines).unwrap_or_else(|e| panic!("{}", e.render()));
    plan.channel(channel)
        .unwrap_or_else(|| panic!("channel {channel}"))
        .broker
        .clone()
}

#[test]
fn a_rabbitmq_queue_keeps_a_point_to_point_channel_named_after_it_by_default() {
    let line =
        format!("  orders: {{kind: point-to-point, store: {{rabbitmq: {{url: '{AMQP}'}}}}}}");
    let plan = broker(&["channels:", &line], "orders").expect("kept in a broker");
    assert_eq!(
        plan.place,
        BrokerPlace::RabbitMqQueue {
            url: AMQP.into(),
            queue: "orders".into()
        }
    );
    assert_eq!((plan.publish_window, plan.retry_for), (None, None));
}

#[test]
fn a_publish_subscribe_channel_goes_through_an_exchange_with_its_limits() {
    let line = format!(
        "  prices: {{kind: publish-subscribe, store: {{rabbitmq: {{url: '{AMQP}', exchange: px, \
         publish-window: 8, retry-for: 5s}}}}}}"
    );
    let plan = broker(&["channels:", &line], "prices").expect("kept in a broker");
    assert_eq!(
        plan.place,
        BrokerPlace::RabbitMqExchange {
            url: AMQP.into(),
            exchange: "px".into()
        }
    );
    assert_eq!(plan.publish_window, Some(8));
    assert_eq!(plan.retry_for, Some(Duration::from_secs(5)));
}

#[test]
fn a_jetstream_stream_is_named_after_the_channel_by_default() {
    let plan = broker(
        &[
            "channels:",
            "  sensor.readings-eu:",
            "    kind: publish-subscribe",
            "    store: {jetstream: {url: 'nats://127.0.0.1:4222', ack-wait: 1m, subject: eip.r}}",
        ],
        "sensor.readings-eu",
    )
    .expect("kept in a broker");
    assert_eq!(
        plan.place,
        BrokerPlace::JetStream {
            url: "nats://127.0.0.1:4222".into(),
            stream: "SENSOR_READINGS_EU".into(),
            subject: Some("eip.r".into()),
            ack_wait: Some(Duration::from_secs(60)),
        }
    );
}

#[test]
fn a_channel_without_a_store_is_kept_in_the_process() {
    assert_eq!(
        broker(&["channels:", "  q: {kind: point-to-point}"], "q"),
        None
    );
}

#[test]
fn a_store_and_durable_true_are_refused_together() {
    let line = format!(
        "  q: {{kind: point-to-point, durable: true, store: {{rabbitmq: {{url: '{AMQP}'}}}}}}"
    );
    let p = only(&["channels:", &line]);
    assert!(
        p.message.contains("`durable: true` and a `store`"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (2, 38));
    assert!(help(&p).contains("choose one"), "{}", help(&p));
}

#[test]
fn a_queue_does_not_fit_a_publish_subscribe_channel_nor_an_exchange_a_queue() {
    let line = format!(
        "  p: {{kind: publish-subscribe, store: {{rabbitmq: {{url: '{AMQP}', queue: x}}}}}}"
    );
    let p = only(&["channels:", &line]);
    assert_eq!(p.message, "`queue` does not fit `p`");
    assert!(help(&p).contains("fanout exchange"), "{}", help(&p));
    let line = format!(
        "  q: {{kind: point-to-point, store: {{rabbitmq: {{url: '{AMQP}', exchange: x}}}}}}"
    );
    let p = only(&["channels:", &line]);
    assert_eq!(p.message, "`exchange` does not fit `q`");
    assert!(help(&p).contains("lives in a queue"), "{}", help(&p));
}

#[test]
fn a_misspelt_broker_or_key_gets_did_you_mean() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, store: {rabbitmw: {}}}",
    ]);
    assert_eq!((at(&p), help(&p)), ((2, 37), "did you mean `rabbitmq`?"));
    let line =
        format!("  q: {{kind: point-to-point, store: {{rabbitmq: {{url: '{AMQP}', queu: x}}}}}}");
    let p = only(&["channels:", &line]);
    assert_eq!(help(&p), "did you mean `queue`?");
}

#[test]
fn a_store_names_exactly_one_broker() {
    let p = only(&[
        "channels:",
        "  q:",
        "    kind: point-to-point",
        "    store:",
        "      rabbitmq: {url: 'amqp://h'}",
        "      jetstream: {url: 'nats://h'}",
    ]);
    assert!(p.message.contains("names 2 brokers"), "{}", p.message);
    let p = only(&["channels:", "  q: {kind: point-to-point, store: rabbitmq}"]);
    assert!(
        p.message.contains("must be a mapping naming one broker"),
        "{}",
        p.message
    );
}

#[test]
fn urls_streams_and_subjects_are_checked() {
    let all = problems(&[
        "channels:",
        "  a: {kind: point-to-point, store: {rabbitmq: {url: 'http://h'}}}",
        "  b: {kind: point-to-point, store: {jetstream: {url: 'nats://h', stream: a.b}}}",
        "  c: {kind: point-to-point, store: {jetstream: {url: 'nats://h', subject: 'x.*'}}}",
        "  d: {kind: point-to-point, store: {rabbitmq: {}}}",
    ]);
    let messages: Vec<&str> = all.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "a RabbitMQ URL starts with `amqp://`",
            "`a.b` can not name a stream",
            "`x.*` is not a subject to publish to",
            "`rabbitmq` of `store` of channel `d` has no `url`",
        ]
    );
}

#[test]
fn drop_oldest_is_refused_for_a_channel_kept_in_a_broker() {
    let line = format!(
        "  p: {{kind: publish-subscribe, overflow: drop-oldest, store: {{rabbitmq: {{url: '{AMQP}'}}}}}}"
    );
    let p = only(&["channels:", &line]);
    assert!(p.message.contains("drop-oldest"), "{}", p.message);
}
