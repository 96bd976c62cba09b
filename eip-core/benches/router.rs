//! The content-based router's decision against parsing the payload, measured in the same run.
//!
//! `content-based router`: a router with 5 `when` clauses, each a JSONPath predicate, over a
//! 1 KiB JSON order; only the 5th clause matches, so every clause is evaluated. eip's side makes a
//! fresh `Message` per iteration (so its one JSON parse is counted) and asks
//! [`ContentBasedRouter::select`] where it goes; the baseline makes the same fresh `Message` and
//! only parses its payload with `serde_json::from_slice::<serde_json::Value>`. The ratio is
//! what routing costs over the parse any JSON-reading router must do: evaluating five compiled
//! JSONPaths on the parsed value.
//!
//! It prints `compare: content-based router: eip X ns/msg, baseline Y ns/msg (serde_json
//! parse), ratio R`, with R = X / Y from the medians of alternating rounds (see `compare`).
//!
//! `datatype json schema`: the Datatype Channel's check of the same order against a JSON Schema
//! of the kind a flow file names (required fields, types, bounds, an enum, an array of item
//! objects): [`Datatype::check`] parses the payload and validates it. The baseline is the same
//! parse alone, so the ratio is what validating costs over reading the JSON.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::channel::{Datatype, DeadLetterChannel, JsonSchema, PointToPoint};
use eip_core::message::Message;
use eip_core::predicate::Predicate;
use eip_core::router::{ContentBasedRouter, Decision};
use support::{alternating_medians, measuring, print_compare};

/// Rounds of the alternating measurement behind the compare line.
const ROUNDS: usize = 41;
/// Messages per side per round.
const ROUND_MESSAGES: u64 = 5_000;

/// The clauses, in order: the first four miss on [`payload`], the fifth matches.
const CLAUSES: [&str; 5] = [
    r#"$.kind == "refund""#,
    r#"$.customer.tier == "platinum" and $.total > 10000"#,
    "exists($.flags.fraud)",
    r#"$.items[?@.sku == 'Z-999'].qty > 0"#,
    r#"$.shipping.country == "NL" and $.total > 100"#,
];

/// A JSON order of exactly 1 KiB.
fn payload() -> Bytes {
    let mut items = String::new();
    for i in 0..6 {
        if i > 0 {
            items.push(',');
        }
        items.push_str(&format!(
            r#"{{"sku":"A-{i:03}","name":"widget number {i}","qty":{},"price":{}.95}}"#,
            i + 1,
            10 * (i + 1)
        ));
    }
    let mut json = format!(
        r#"{{"id":"ord-20240611-000123","kind":"sale","customer":{{"id":"c-778","name":"Ada Lovelace","tier":"gold","email":"ada@example.com"}},"shipping":{{"street":"Keizersgracht 1","city":"Amsterdam","country":"NL"}},"items":[{items}],"total":1234.5,"currency":"EUR","flags":{{"gift":false}},"note":""#
    );
    // Pad the note to reach 1024 bytes with the closing `"}`.
    while json.len() < 1024 - 2 {
        json.push('x');
    }
    json.push_str("\"}");
    assert_eq!(json.len(), 1024);
    Bytes::from(json)
}

type Run<'a> = Box<dyn Fn(u64) -> Duration + 'a>;

fn router(c: &mut Criterion) {
    let payload = payload();
    let mut builder = ContentBasedRouter::builder("orders");
    for (i, clause) in CLAUSES.iter().enumerate() {
        let predicate = Predicate::parse(clause).expect("clause parses");
        let target = PointToPoint::new(&format!("target{i}"), 16).expect("channel");
        builder = builder.when(predicate, target);
    }
    let dead_letters = DeadLetterChannel::new("dead-letters", 16).expect("channel");
    let router = builder
        .dead_letter_channel(dead_letters)
        .build()
        .expect("router");
    assert!(
        matches!(
            router.select(&Message::new(payload.clone())),
            Decision::When { index: 4, .. }
        ),
        "only the 5th clause matches"
    );

    let (p, r) = (&payload, &router);
    compare(
        c,
        "content-based router",
        "serde_json parse",
        Box::new(move |n| {
            let start = Instant::now();
            for _ in 0..n {
                let msg = Message::new(p.clone());
                black_box(r.select(black_box(&msg)));
            }
            start.elapsed()
        }),
        parse_only(p),
    );
}

/// The baseline of both compares: a fresh message, its payload parsed into a
/// `serde_json::Value`.
fn parse_only(payload: &Bytes) -> Run<'_> {
    Box::new(move |n| {
        let start = Instant::now();
        for _ in 0..n {
            let msg = Message::new(payload.clone());
            let value: Result<serde_json::Value, _> =
                serde_json::from_slice(black_box(&msg).payload());
            black_box(value.is_ok());
        }
        start.elapsed()
    })
}

/// A schema for [`payload`]'s orders, as a flow file's datatype would say it.
fn order_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "required": ["id", "kind", "customer", "items", "total", "currency"],
        "properties": {
            "id": {"type": "string", "pattern": "^ord-[0-9]{8}-[0-9]+$"},
            "kind": {"enum": ["sale", "refund"]},
            "customer": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {
                    "id": {"type": "string"},
                    "name": {"type": "string", "minLength": 1},
                    "tier": {"enum": ["bronze", "silver", "gold", "platinum"]},
                    "email": {"type": "string", "format": "email"}
                }
            },
            "items": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["sku", "qty", "price"],
                    "properties": {
                        "sku": {"type": "string"},
                        "qty": {"type": "integer", "minimum": 1},
                        "price": {"type": "number", "exclusiveMinimum": 0}
                    }
                }
            },
            "total": {"type": "number", "minimum": 0},
            "currency": {"type": "string", "minLength": 3, "maxLength": 3}
        }
    })
}

fn datatype(c: &mut Criterion) {
    let payload = payload();
    let schema = JsonSchema::new("order", &order_schema()).expect("the schema compiles");
    assert_eq!(schema.check(&Message::new(payload.clone())), Ok(()));
    let (p, s) = (&payload, &schema);
    compare(
        c,
        "datatype json schema",
        "serde_json parse",
        Box::new(move |n| {
            let start = Instant::now();
            for _ in 0..n {
                let msg = Message::new(p.clone());
                black_box(s.check(black_box(&msg)).is_ok());
            }
            start.elapsed()
        }),
        parse_only(p),
    );
}

/// Benchmarks both sides as one criterion group, then prints the compare line from the medians
/// of [`ROUNDS`] alternating rounds, so that both sides see the same machine load.
fn compare(c: &mut Criterion, name: &str, baseline_label: &str, eip: Run<'_>, baseline: Run<'_>) {
    let mut group = c.benchmark_group(name);
    let mut ran = false;
    for (id, run) in [("eip", &eip), ("baseline", &baseline)] {
        group.bench_function(id, |b| {
            ran = true;
            b.iter_custom(run)
        });
    }
    group.finish();
    // Filtered out by the command line, or a `--test` run: nothing to compare.
    if !ran || !measuring() {
        return;
    }
    let per_message = |run: &Run<'_>| run(ROUND_MESSAGES).as_nanos() as f64 / ROUND_MESSAGES as f64;
    let (x, y) = alternating_medians(ROUNDS, |_| per_message(&eip), |_| per_message(&baseline));
    print_compare(name, x, y, baseline_label);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = router, datatype
}
criterion_main!(benches);
