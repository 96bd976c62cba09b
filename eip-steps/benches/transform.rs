//! The Message Translator on a 1 KiB JSON order against the same jq program run by jaq on an
//! already parsed value, measured in the same run.
//!
//! eip's side is the whole step as a route runs it: [`Translate::apply`] on the message, which
//! parses the payload into jaq's value, runs the program, checks that it gave exactly one
//! output, writes that as the new JSON payload and sets the content type. The baseline is jaq
//! alone: the program compiled the same way, run in a loop on a value parsed once before the
//! loop, its one output taken (and the absence of a second checked). A check pass first asserts
//! that both give the same output. Everything runs on one thread.
//!
//! It prints `compare: transform jq: eip X ns/msg, baseline Y ns/msg (jaq on a parsed value),
//! ratio R`: X and Y are the medians of short rounds that alternate eip and baseline (criterion's
//! samples run one side after the other, and on a shared machine the load drifts between them),
//! each round starting with an untimed pass; R is the median of the rounds' own ratios, each
//! taken between two measurements a few milliseconds apart. Then where eip's extra time goes: parsing the
//! payload into jaq's value, whole (an expression that outputs nothing) and only the parts the
//! program reads (an expression with the program's demand that outputs nothing), next to
//! serde_json parsing it into a `serde_json::Value` and jaq's own parser; and eip's messages
//! per second.
//!
//! `EIP_TRANSFORM_SIDE=eip` (or `baseline`, `projected parse`) runs that side alone
//! `EIP_TRANSFORM_COUNT` times (default 10 000) and nothing else, for a profiler: `valgrind
//! --tool=callgrind` counts its instructions, and the difference between two counts divided by
//! the difference of their `EIP_TRANSFORM_COUNT` is one run's.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use eip_core::Message;
use eip_steps::expr::Jq;
use eip_steps::translate::Translate;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;

const PROGRAM: &str =
    "{id: .id, total: (.items | map(.price * .qty) | add), customer: .customer.name}";
/// Short rounds, many of them: the machine's load moves within seconds, and a round's eip and
/// baseline should see the same load.
const ROUNDS: usize = 41;
const PER_ROUND: usize = 1_000;

type Data = data::JustLut<Val>;

/// An order of about 1 KiB: a customer, ten items and a note.
fn order() -> String {
    let items: Vec<String> = (1..=10)
        .map(|i| {
            format!(
                r#"{{"sku": "SKU-{i:05}", "name": "Widget number {i}", "price": {}.{}5, "qty": {}}}"#,
                10 + i,
                i,
                i % 4 + 1
            )
        })
        .collect();
    let order = format!(
        r#"{{"id": "ord-2026-000123", "placed": "2026-12-01T17:00:00Z", "customer": {{"name": "Ada Lovelace", "email": "ada@example.com", "address": {{"street": "12 St James's Square", "city": "London", "zip": "SW1Y 4JH", "country": "GB"}}}}, "items": [{}], "note": "leave at the door"}}"#,
        items.join(", ")
    );
    assert!(
        (1000..=1100).contains(&order.len()),
        "{} bytes",
        order.len()
    );
    order
}

/// The program compiled by jaq alone, with the same standard library.
fn baseline_filter() -> jaq_core::Filter<Data> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs::<Data>()
        .chain(jaq_std::funs::<Data>())
        .chain(jaq_json::funs::<Data>());
    let arena = Arena::default();
    let file = File {
        code: PROGRAM,
        path: (),
    };
    let modules = Loader::new(defs)
        .load(&arena, file)
        .expect("the program parses");
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .expect("the program compiles")
}

struct Work {
    translate: Translate,
    message: Message,
    filter: jaq_core::Filter<Data>,
    parsed: Val,
}

impl Work {
    fn new() -> Self {
        let payload = order();
        let parsed = jaq_json::read::parse_single(payload.as_bytes()).expect("the order parses");
        Work {
            translate: Translate::builder()
                .payload(Jq::compile(PROGRAM).expect("the program compiles"))
                .build(),
            message: Message::builder(payload).header("desk", "fx").build(),
            filter: baseline_filter(),
            parsed,
        }
    }

    fn eip(&self) -> Message {
        self.translate
            .apply(self.message.clone())
            .expect("the order translates")
    }

    fn baseline(&self) -> Val {
        let ctx = Ctx::<Data>::new(&self.filter.lut, Vars::new([]));
        let mut outs = self.filter.id.run((ctx, self.parsed.clone()));
        let first = outs.next();
        assert!(outs.next().is_none());
        match first {
            Some(Ok(v)) => v,
            _ => panic!("the baseline gave no output"),
        }
    }
}

/// Time per run of `count` runs of `f`, after as many untimed ones: the other side's round has
/// just filled the caches with its own data.
fn time(count: usize, f: &dyn Fn()) -> f64 {
    for _ in 0..count {
        f();
    }
    let begin = Instant::now();
    for _ in 0..count {
        f();
    }
    begin.elapsed().as_nanos() as f64 / count as f64
}

/// Whether this is a real `cargo bench` run (not `--test` or `--list`).
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

/// The middle value (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `EIP_TRANSFORM_SIDE`: one side run alone, `EIP_TRANSFORM_COUNT` times.
fn one_side(work: &Work, side: &str) {
    let count: usize = std::env::var("EIP_TRANSFORM_COUNT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let projected =
        Jq::compile(&format!("if false then {PROGRAM} else 1 end | empty")).expect("compiles");
    let run: &dyn Fn() = match side {
        "eip" => &|| drop(black_box(work.eip())),
        "baseline" => &|| drop(black_box(work.baseline())),
        "projected parse" => &|| drop(black_box(projected.all(&work.message))),
        other => {
            panic!("EIP_TRANSFORM_SIDE is `eip`, `baseline` or `projected parse`, not `{other}`")
        }
    };
    let begin = Instant::now();
    for _ in 0..count {
        run();
    }
    eprintln!(
        "transform jq {side}: {count} runs, {:.0} ns/run",
        begin.elapsed().as_nanos() as f64 / count as f64
    );
}

fn transform(c: &mut Criterion) {
    let work = Work::new();
    if let Ok(side) = std::env::var("EIP_TRANSFORM_SIDE") {
        return one_side(&work, &side);
    }
    let eip: serde_json::Value =
        serde_json::from_slice(work.eip().payload()).expect("eip wrote JSON");
    let baseline: serde_json::Value =
        serde_json::from_str(&work.baseline().to_string()).expect("jaq wrote JSON");
    assert_eq!(eip, baseline);

    let name = "transform jq";
    let mut group = c.benchmark_group(name);
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let mut ran = false;
    group.bench_function("eip", |b| {
        ran = true;
        b.iter(|| work.eip())
    });
    group.bench_function("baseline", |b| b.iter(|| work.baseline()));
    group.finish();
    if !ran || !measuring() {
        return;
    }
    let parse_only = Jq::compile("empty").expect("compiles");
    // Reads what the program reads (the branch never taken counts), outputs nothing.
    let parse_projected =
        Jq::compile(&format!("if false then {PROGRAM} else 1 end | empty")).expect("compiles");
    let sides: [(&str, &dyn Fn()); 6] = [
        ("eip", &|| drop(black_box(work.eip()))),
        ("baseline", &|| drop(black_box(work.baseline()))),
        ("parse", &|| drop(black_box(parse_only.all(&work.message)))),
        ("projected parse", &|| {
            drop(black_box(parse_projected.all(&work.message)))
        }),
        ("serde_json::Value", &|| {
            drop(black_box(serde_json::from_slice::<serde_json::Value>(
                work.message.payload(),
            )))
        }),
        ("jaq's parser", &|| {
            drop(black_box(jaq_json::read::parse_single(
                work.message.payload(),
            )))
        }),
    ];
    let mut rounds: [Vec<f64>; 6] = Default::default();
    for _ in 0..ROUNDS {
        for ((_, side), times) in sides.iter().zip(&mut rounds) {
            times.push(time(PER_ROUND, side));
        }
    }
    let ratios: Vec<f64> = rounds[0]
        .iter()
        .zip(&rounds[1])
        .map(|(x, y)| x / y)
        .collect();
    let ratio = median(ratios);
    let [x, y, parse, projected, value, jaq] = rounds.map(median);
    println!(
        "compare: {name}: eip {x:.1} ns/msg, baseline {y:.1} ns/msg (jaq on a parsed value), ratio {ratio:.2}"
    );
    println!(
        "detail: {name}: eip parses the payload into jaq's value in {parse:.0} ns/msg, \
         the parts the program reads in {projected:.0} ns \
         (into a serde_json::Value: {value:.0} ns, with jaq's own parser: {jaq:.0} ns)"
    );
    println!(
        "throughput: {name}: eip {:.0} msg/s on one core ({} byte payload)",
        1e9 / x,
        work.message.payload().len()
    );
}

criterion_group!(benches, transform);
criterion_main!(benches);
