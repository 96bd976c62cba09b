//! Channels in a flow file: datatype schemas and their invalid channel, dead letter channels,
//! overflow, durations, redelivery and capacity.

mod support {
    pub mod problems;
    pub mod validate;
}

use support::problems::{at, help, only, problems};
use support::validate::fixtures;

#[test]
fn a_missing_schema_file_names_the_path_tried() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/nope.json, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert!(
        p.message
            .starts_with("can not read the schema file `schemas/nope.json`"),
        "{}",
        p.message
    );
    assert_eq!(at(&p), (2, 39));
    let tried = fixtures().join("schemas/nope.json");
    assert!(
        help(&p).contains(&tried.display().to_string()),
        "{}",
        help(&p)
    );
}

#[test]
fn a_schema_file_that_is_not_json_or_not_a_schema_is_refused() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/broken.json, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert_eq!(
        p.message,
        "the schema file `schemas/broken.json` is not JSON"
    );
    assert!(help(&p).contains("line 5"), "{}", help(&p));

    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/not-a-schema.json, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert_eq!(
        p.message,
        "the schema file `schemas/not-a-schema.json` is not a valid JSON Schema"
    );
}

#[test]
fn a_datatype_and_an_invalid_channel_go_together() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/trade.json}",
    ]);
    assert_eq!(
        p.message,
        "channel `q` has a `datatype` but no `invalid` channel"
    );
    assert_eq!(at(&p), (2, 39));

    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, invalid: bad}",
        "  bad: {kind: point-to-point}",
    ]);
    assert_eq!(
        p.message,
        "channel `q` has an `invalid` channel but no `datatype`"
    );
    assert_eq!(at(&p), (2, 38));
}

#[test]
fn invalid_and_dead_letter_channels_must_be_queues() {
    let ps = problems(&[
        "channels:",
        "  q: {kind: point-to-point, datatype: schemas/trade.json, invalid: news, dead-letter: news}",
        "  news: {kind: publish-subscribe}",
    ]);
    let found: Vec<(&str, (u32, u32))> = ps.iter().map(|p| (p.message.as_str(), at(p))).collect();
    assert_eq!(
        found,
        [
            (
                "`invalid` must be a point-to-point channel, and `news` is publish-subscribe",
                (2, 68)
            ),
            (
                "`dead-letter` must be a point-to-point channel, and `news` is publish-subscribe",
                (2, 87)
            ),
        ]
    );
    let p = only(&["channels:", "  q: {kind: point-to-point, dead-letter: q}"]);
    assert_eq!(p.message, "channel `q` is its own dead letter channel");
}

#[test]
fn overflow_is_for_publish_subscribe_channels_only() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, overflow: drop-oldest}",
    ]);
    assert_eq!(
        p.message,
        "`overflow` applies to publish-subscribe channels only, and `q` is point-to-point"
    );
    assert_eq!(at(&p), (2, 39));
}

#[test]
fn durations_are_whole_numbers_with_a_unit() {
    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, time-to-live: 1.5s}",
    ]);
    assert_eq!(
        p.message,
        "invalid `time-to-live`: `1.5s` is not a duration"
    );
    assert_eq!(at(&p), (2, 43));
    assert!(help(&p).ends_with("write `1500ms`"), "{}", help(&p));

    let p = only(&["channels:", "  q: {kind: point-to-point, time-to-live: 30}"]);
    assert_eq!(
        p.message,
        "`time-to-live` must be a duration such as `30s`, found a whole number"
    );
    assert!(help(&p).contains("`30s`?"), "{}", help(&p));

    let p = only(&[
        "channels:",
        "  q: {kind: point-to-point, redelivery: {initial-backoff: 3d}}",
    ]);
    assert_eq!(
        p.message,
        "invalid `initial-backoff`: `3d`: unknown unit `d`"
    );

    let p = only(&["channels:", "  q: {kind: point-to-point, time-to-live: 0s}"]);
    assert_eq!(p.message, "`time-to-live` must be longer than 0");
}

#[test]
fn redelivery_values_are_checked() {
    let ps = problems(&[
        "channels:",
        "  q:",
        "    kind: point-to-point",
        "    redelivery:",
        "      max-attempts: 0",
        "      initial-backoff: 2s",
        "      max-backoff: 1s",
        "      multiplier: 0.5",
        "      jitter: 2",
    ]);
    let found: Vec<(&str, u32)> = ps.iter().map(|p| (p.message.as_str(), at(p).0)).collect();
    assert_eq!(
        found,
        [
            ("`max-attempts` must be at least 1, found 0", 5),
            ("`max-backoff` is shorter than `initial-backoff`", 7),
            ("`multiplier` must be at least 1.0, found 0.5", 8),
            ("`jitter` must be from 0.0 to 1.0, found 2", 9),
        ]
    );
}

#[test]
fn capacity_zero_is_refused() {
    let p = only(&["channels:", "  q: {kind: point-to-point, capacity: 0}"]);
    assert_eq!(p.message, "`capacity` must be at least 1, found 0");
    assert_eq!(at(&p), (2, 39));
}
