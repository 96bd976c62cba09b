//! Guaranteed Delivery in a flow file: `durable` channels, the `store:` section with its data
//! directory and disk cap, and the rule that what a durable channel can not deliver is kept
//! on disk too.

use std::path::Path;

mod support {
    pub mod problems;
    pub mod validate;
}

use support::problems::{at, help, only, problems};
use support::validate::{fixtures, load};

/// The flow's channels that the plan marks durable, in plan order.
fn durable(lines: &[&str]) -> Vec<String> {
    let plan = load(lines).unwrap_or_else(|e| panic!("{}", e.render()));
    plan.channels
        .iter()
        .filter(|c| c.durable)
        .map(|c| c.name.clone())
        .collect()
}

// ---------------------------------------------------------------- durable

#[test]
fn a_channel_is_durable_only_when_it_says_so() {
    let plan = load(&[
        "channels:",
        "  orders:   {kind: point-to-point, durable: true}",
        "  prices:   {kind: publish-subscribe, durable: true}",
        "  audit:    {kind: point-to-point, durable: false}",
        "  scratch:  {kind: point-to-point}",
    ])
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let flags: Vec<(&str, bool)> = plan
        .channels
        .iter()
        .map(|c| (c.name.as_str(), c.durable))
        .collect();
    assert_eq!(
        flags,
        [
            ("orders", true),
            ("prices", true),
            ("audit", false),
            ("scratch", false),
            ("dead-letters", true),
        ]
    );
    assert!(plan.has_durable_channels());
}

#[test]
fn a_flow_without_durable_channels_needs_no_store() {
    let plan = load(&["channels:", "  orders: {kind: point-to-point}"]).expect("valid");
    assert!(!plan.has_durable_channels());
    assert!(plan.channels.iter().all(|c| !c.durable));
    assert_eq!(plan.store, Default::default());
}

#[test]
fn durable_must_be_true_or_false() {
    let p = only(&["channels:", "  q: {kind: point-to-point, durable: \"yes\"}"]);
    assert_eq!(
        p.message,
        "`durable` must be `true` or `false`, found a string"
    );
    assert_eq!(at(&p), (2, 39));
    assert_eq!(p.key.as_deref(), Some(r#"channels["q"].durable"#));
}

#[test]
fn a_misspelt_durable_gets_did_you_mean() {
    let p = only(&["channels:", "  q: {kind: point-to-point, durabel: true}"]);
    assert_eq!(p.message, "unknown key `durabel` in channel `q`");
    assert_eq!((at(&p), help(&p)), ((2, 29), "did you mean `durable`?"));
}

// ---------------------------------------------------------------- the propagation rule

#[test]
fn the_default_dead_letter_channel_of_a_durable_channel_is_durable() {
    assert_eq!(
        durable(&[
            "channels:",
            "  orders: {kind: point-to-point, durable: true}",
            "  other:  {kind: point-to-point}",
        ]),
        ["orders", "dead-letters"]
    );
    // Declared, it is the same channel.
    assert_eq!(
        durable(&[
            "channels:",
            "  dead-letters: {kind: point-to-point, capacity: 10}",
            "  orders: {kind: point-to-point, durable: true}",
        ]),
        ["dead-letters", "orders"]
    );
}

#[test]
fn the_dead_letter_and_invalid_channels_of_a_durable_channel_are_durable_along_the_chain() {
    let names = durable(&[
        "channels:",
        "  orders:",
        "    kind: point-to-point",
        "    durable: true",
        "    datatype: schemas/trade.json",
        "    invalid: orders.invalid",
        "    dead-letter: orders.dead",
        "  orders.invalid: {kind: point-to-point, dead-letter: orders.invalid.dead}",
        "  orders.invalid.dead: {kind: point-to-point}",
        "  orders.dead: {kind: point-to-point}",
        "  other: {kind: point-to-point, dead-letter: other.dead}",
        "  other.dead: {kind: point-to-point}",
    ]);
    assert_eq!(
        names,
        [
            "orders",
            "orders.invalid",
            "orders.invalid.dead",
            "orders.dead",
            "dead-letters"
        ]
    );
}

#[test]
fn channels_that_only_non_durable_channels_use_stay_in_memory() {
    assert_eq!(
        durable(&[
            "channels:",
            "  other: {kind: point-to-point, dead-letter: other.dead}",
            "  other.dead: {kind: point-to-point}",
        ]),
        Vec::<String>::new()
    );
}

#[test]
fn a_channel_written_not_durable_that_serves_a_durable_one_is_refused() {
    for (lines, message, position) in [
        (
            [
                "channels:",
                "  orders: {kind: point-to-point, durable: true, dead-letter: orders.dead}",
                "  orders.dead: {kind: point-to-point, durable: false}",
            ],
            "channel `orders.dead` is `durable: false`, but it is the dead letter channel of \
             the durable channel `orders`",
            (3, 48),
        ),
        (
            [
                "channels:",
                "  dead-letters: {kind: point-to-point, durable: false}",
                "  orders: {kind: point-to-point, durable: true}",
            ],
            "channel `dead-letters` is `durable: false`, but it is the dead letter channel of \
             the durable channel `orders`",
            (2, 49),
        ),
        (
            [
                "channels:",
                "  orders: {kind: point-to-point, durable: true, datatype: schemas/trade.json, \
                 invalid: bad}",
                "  bad: {kind: point-to-point, durable: false}",
            ],
            "channel `bad` is `durable: false`, but it is the invalid message channel of the \
             durable channel `orders`",
            (3, 40),
        ),
    ] {
        let p = only(&lines);
        assert_eq!(p.message, message);
        assert_eq!(at(&p), position, "{message}");
        assert!(p.key.as_deref().is_some_and(|k| k.ends_with("].durable")));
        assert!(help(&p).contains("remove `durable: false`"), "{}", help(&p));
    }
}

// ---------------------------------------------------------------- store

#[test]
fn the_store_path_is_relative_to_the_flow_file() {
    let plan = load(&[
        "channels:",
        "  orders: {kind: point-to-point, durable: true}",
        "store:",
        "  path: data/eip",
        "  max-bytes: 512 MiB",
    ])
    .unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(plan.store.path, Some(fixtures().join("data/eip")));
    assert_eq!(plan.store.max_bytes, Some(512 * 1024 * 1024));

    let plan = load(&["store: {path: /var/lib/eip}"]).expect("valid");
    assert_eq!(plan.store.path.as_deref(), Some(Path::new("/var/lib/eip")));
    assert_eq!(plan.store.max_bytes, None);
}

#[test]
fn a_store_without_durable_channels_is_valid_and_unused() {
    let plan = load(&[
        "channels:",
        "  orders: {kind: point-to-point}",
        "store: {path: data, max-bytes: 1 GiB}",
    ])
    .expect("valid, with no warning");
    assert!(!plan.has_durable_channels());
    assert_eq!(plan.store.max_bytes, Some(1 << 30));
    // Still checked.
    let p = only(&["store: {max-bytes: 0}"]);
    assert_eq!(
        p.message,
        "invalid `max-bytes`: `0` is not more than 0 bytes"
    );
}

#[test]
fn an_empty_store_section_is_the_defaults() {
    for lines in [&["store:"][..], &["store: {}"][..]] {
        let plan = load(lines).unwrap_or_else(|e| panic!("{}", e.render()));
        assert_eq!(plan.store, Default::default());
    }
}

#[test]
fn every_size_form_is_read_in_bytes() {
    const KIB: u64 = 1024;
    for (written, bytes) in [
        ("4096", 4096),
        ("\"4096\"", 4096),
        ("512 MiB", 512 * KIB * KIB),
        ("2GiB", 2 * KIB * KIB * KIB),
        ("10 MB", 10_000_000),
        ("1.5 GB", 1_500_000_000),
        ("1.5 KiB", 1536),
        ("3 kB", 3000),
        ("1 TiB", KIB.pow(4)),
        ("2 TB", 2_000_000_000_000),
        ("100 B", 100),
        ("18446744073709551615", u64::MAX),
    ] {
        let line = format!("store: {{max-bytes: {written}}}");
        let plan = load(&[&line]).unwrap_or_else(|e| panic!("{written}: {}", e.render()));
        assert_eq!(plan.store.max_bytes, Some(bytes), "{written}");
    }
}

#[test]
fn every_bad_size_is_refused_at_its_value() {
    for (written, message, help_has) in [
        (
            "0",
            "invalid `max-bytes`: `0` is not more than 0 bytes",
            "`512 MiB`",
        ),
        (
            "0 GiB",
            "invalid `max-bytes`: `0 GiB` is not more than 0 bytes",
            "`4096`",
        ),
        (
            "-1",
            "invalid `max-bytes`: `-1` is not more than 0 bytes",
            "`4096`",
        ),
        (
            "18446744073709551616",
            "invalid `max-bytes`: `18446744073709551616` is too large: at most 18446744073709551615 bytes",
            "`4096`",
        ),
        (
            "16777216 TiB",
            "invalid `max-bytes`: `16777216 TiB` is too large: at most 18446744073709551615 bytes",
            "`4096`",
        ),
        (
            "1.3 KiB",
            "invalid `max-bytes`: `1.3 KiB` is not a whole number of bytes",
            "smaller unit",
        ),
        (
            "0.5",
            "invalid `max-bytes`: `0.5` is not a whole number of bytes",
            "smaller unit",
        ),
        (
            "2 gib",
            "invalid `max-bytes`: `2 gib`: unknown unit `gib`",
            "usual case: `GiB`",
        ),
        (
            "10 Mb",
            "invalid `max-bytes`: `10 Mb`: unknown unit `Mb`",
            "usual case: `MB`",
        ),
        (
            "3 PB",
            "invalid `max-bytes`: `3 PB`: unknown unit `PB`",
            "powers of 1024",
        ),
        (
            "lots",
            "invalid `max-bytes`: `lots` is not a size",
            "`1.5 GB`",
        ),
        (
            "1e9",
            "invalid `max-bytes`: `1e9` is not a size",
            "`1.5 GB`",
        ),
        (
            "true",
            "`max-bytes` must be a size such as `512 MiB`, or a number of bytes, found a boolean",
            "",
        ),
        (
            "[1, GiB]",
            "`max-bytes` must be a size such as `512 MiB`, or a number of bytes, found a list",
            "",
        ),
    ] {
        let line = format!("  max-bytes: {written}");
        let p = only(&["store:", &line]);
        assert_eq!(p.message, message, "{written}");
        assert_eq!(at(&p), (2, 14), "{written}");
        assert_eq!(p.key.as_deref(), Some("store.max-bytes"), "{written}");
        assert!(help(&p).contains(help_has), "{written}: {}", help(&p));
    }
}

#[test]
fn an_unknown_key_under_store_gets_did_you_mean() {
    let p = only(&["store:", "  path: data", "  max-byte: 1 GiB"]);
    assert_eq!(p.message, "unknown key `max-byte` in `store`");
    assert_eq!(at(&p), (3, 3));
    assert_eq!(help(&p), "did you mean `max-bytes`?");
    assert_eq!(p.key.as_deref(), Some("store.max-byte"));

    let p = only(&["store: {pth: data}"]);
    assert_eq!(help(&p), "did you mean `path`?");

    let p = only(&["stor: {path: data}"]);
    assert_eq!(p.message, "unknown key `stor` in the flow file");
    assert_eq!(help(&p), "did you mean `store`?");
}

#[test]
fn a_bad_store_path_is_refused_at_its_value() {
    let p = only(&["store: {path: ''}"]);
    assert_eq!(p.message, "`path` of `store` is empty");
    assert_eq!(at(&p), (1, 16));
    assert_eq!(p.key.as_deref(), Some("store.path"));

    let p = only(&["store: {path: 42}"]);
    assert_eq!(p.message, "`path` must be a string, found a whole number");

    let p = only(&["store: data"]);
    assert_eq!(p.message, "`store` must be a mapping, found a string");
    assert_eq!(at(&p), (1, 8));
}

#[test]
fn every_store_problem_is_reported_together() {
    let ps = problems(&[
        "channels:",
        "  q: {kind: point-to-point, durable: 1}",
        "store:",
        "  path: ''",
        "  max-bytes: 0 MB",
        "  cap: 1",
    ]);
    let found: Vec<(u32, u32)> = ps.iter().map(at).collect();
    assert_eq!(found, [(2, 38), (4, 10), (5, 14), (6, 3)], "{ps:#?}");
}
