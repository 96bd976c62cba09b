//! A smaller `eip`: a flow that names a kind (or a channel store) this build was made without
//! is refused with the cargo feature that builds it; with the feature, the same flow validates.
//!
//! Run it both ways: `cargo test -p eip-dsl --test features` (every feature) and
//! `cargo test -p eip-dsl --no-default-features --features file,http --test features`.

mod support {
    pub mod problems;
    pub mod validate;
}

use support::problems::{at, help, only};
use support::validate::load;

const TIMER: &[&str] = &[
    "channels:",
    "  ticks: {kind: point-to-point}",
    "adapters:",
    "  clock: {kind: timer, to: ticks, interval: 1s}",
];

const SQL: &[&str] = &[
    "channels:",
    "  orders: {kind: point-to-point}",
    "adapters:",
    "  db:",
    "    kind: sql-out",
    "    from: orders",
    "    url: sqlite:orders.db",
    "    statement: INSERT INTO t (a) VALUES (:$.a)",
];

const RABBITMQ_CHANNEL: &[&str] = &[
    "channels:",
    "  orders:",
    "    kind: point-to-point",
    "    store: {rabbitmq: {url: 'amqp://guest:guest@127.0.0.1:5672/%2f'}}",
];

/// The flow is refused, once, at the kind's value, naming `feature`.
fn refused_for_feature(lines: &[&str], kind: &str, feature: &str, at_line: u32) {
    let p = &only(lines);
    assert_eq!(
        p.message,
        format!("kind `{kind}` is not built into this eip: its cargo feature `{feature}` is off")
    );
    assert_eq!(at(p).0, at_line);
    assert!(
        help(p).contains(&format!("--features {feature}")),
        "{}",
        help(p)
    );
}

#[test]
fn a_timer_needs_the_timer_feature() {
    if cfg!(feature = "timer") {
        load(TIMER).unwrap_or_else(|e| panic!("{}", e.render()));
    } else {
        refused_for_feature(TIMER, "timer", "timer", 4);
    }
}

#[test]
fn a_database_adapter_needs_the_sql_feature() {
    if cfg!(feature = "sql") {
        load(SQL).unwrap_or_else(|e| panic!("{}", e.render()));
    } else {
        refused_for_feature(SQL, "sql-out", "sql", 5);
    }
}

#[test]
fn a_channel_kept_in_rabbitmq_needs_the_amqp_feature() {
    if cfg!(feature = "amqp") {
        load(RABBITMQ_CHANNEL).unwrap_or_else(|e| panic!("{}", e.render()));
    } else {
        let p = &only(RABBITMQ_CHANNEL);
        assert!(
            p.message.ends_with(
                "`rabbitmq` is not built into this eip: its cargo feature `amqp` is off"
            ),
            "{}",
            p.message
        );
        assert!(help(p).contains("--features amqp"));
    }
}

#[test]
fn the_kinds_built_are_those_of_the_features_on() {
    let built: Vec<&str> = eip_dsl::kind::KINDS.iter().map(|k| k.id.as_str()).collect();
    assert_eq!(built.contains(&"file-in"), cfg!(feature = "file"));
    assert_eq!(built.contains(&"http-out"), cfg!(feature = "http"));
    assert_eq!(built.contains(&"sql-in"), cfg!(feature = "sql"));
    assert_eq!(built.contains(&"timer"), cfg!(feature = "timer"));
    assert_eq!(built.contains(&"rabbitmq-in"), cfg!(feature = "amqp"));
    assert_eq!(built.contains(&"nats-out"), cfg!(feature = "nats"));
    assert_eq!(built.contains(&"mqtt-in"), cfg!(feature = "mqtt"));
    assert_eq!(built.contains(&"redis-out"), cfg!(feature = "redis"));
}
