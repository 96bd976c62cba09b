//! `concurrency:` of a route: up to N of its messages in processing at once and never more,
//! every message delivered (order not assumed) and acknowledged, a dedupe that judges a copy
//! by its original's outcome, a throttle whose rate stays the route's, and the problems
//! `eip validate` reports.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eip_core::Message;
use eip_core::channel::Channel;
use eip_dsl::compile::{self, Flow, StoreOptions};
use eip_dsl::load;
use eip_dsl::step::Services;
use tokio::sync::Semaphore;
use tokio::time::Instant;

mod support {
    pub mod durable_run;
    pub mod problems;
    pub mod scratch;
    pub mod validate;
}

use support::durable_run::run_durable;
use support::problems::{at, help, only};
use support::scratch::Scratch;

fn order(n: u64) -> Message {
    Message::new(format!(r#"{{"order": {n}}}"#))
}

fn order_of(msg: &Message) -> u64 {
    let value: serde_json::Value = serde_json::from_slice(msg.payload()).expect("JSON");
    value["order"].as_u64().expect("an order number")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Waits (10 s at most) until `done` says yes; whether it did.
async fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    true
}

/// A service that counts the calls in progress (now and at most) and holds each until the
/// test lets it go, one permit a call.
#[derive(Clone)]
struct Gate {
    now: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    done: Arc<AtomicUsize>,
    permits: Arc<Semaphore>,
}

impl Gate {
    fn new() -> Self {
        Gate {
            now: Arc::default(),
            most: Arc::default(),
            done: Arc::default(),
            permits: Arc::new(Semaphore::new(0)),
        }
    }

    fn service(&self) -> Services {
        let gate = self.clone();
        let held = tower::service_fn(move |msg: Message| {
            let gate = gate.clone();
            async move {
                let now = gate.now.fetch_add(1, Ordering::SeqCst) + 1;
                gate.most.fetch_max(now, Ordering::SeqCst);
                let permit = gate.permits.acquire().await.map_err(|e| e.to_string())?;
                permit.forget();
                gate.now.fetch_sub(1, Ordering::SeqCst);
                gate.done.fetch_add(1, Ordering::SeqCst);
                Ok::<_, tower::BoxError>(msg)
            }
        });
        Services::new().add("held", held)
    }
}

fn flow_of(source: &str, services: &Services) -> Flow {
    let plan = load::load_str_with(source, "flow.yaml", Path::new("."), services)
        .unwrap_or_else(|e| panic!("{}", e.render()));
    compile::compile(&plan).expect("the flow compiles")
}

fn queue(flow: &Flow, name: &str) -> eip_core::channel::PointToPoint {
    match flow.channels().iter().find(|c| c.name() == name) {
        Some(Channel::PointToPoint(q)) => q.clone(),
        _ => panic!("{name} is a queue of the flow"),
    }
}

/// What reached the flow's outputs, by channel.
type Outputs = Arc<Mutex<BTreeMap<String, Vec<Message>>>>;

fn output(seen: &Outputs) -> compile::Output {
    let seen = seen.clone();
    Arc::new(move |channel: &str, msg: &Message| {
        let mut seen = seen.lock().expect("not poisoned");
        seen.entry(channel.to_owned())
            .or_default()
            .push(msg.clone());
    })
}

fn held_route(concurrency: &str) -> String {
    format!(
        "
channels:
  orders: {{kind: point-to-point}}
  out: {{kind: point-to-point}}
routes:
  - from: orders
    steps:
      - process: held
    to: out
{concurrency}
"
    )
}

/// Sends `total` orders through the held route and lets the calls go `batch` at a time, each
/// time once `batch` of them are in progress at once. The most in progress at once.
fn most_in_flight(source: &str, total: usize, batch: usize) -> usize {
    let gate = Gate::new();
    let flow = flow_of(source, &gate.service());
    runtime().block_on(async {
        let seen = Outputs::default();
        let running = flow.start(output(&seen));
        let orders = queue(&flow, "orders");
        for n in 0..total {
            orders.send(order(n as u64)).await.expect("accepted");
        }
        for round in 0..total / batch {
            let full = wait_until(|| gate.now.load(Ordering::SeqCst) == batch).await;
            assert!(full, "{batch} calls in progress in round {round}");
            gate.permits.add_permits(batch);
            let let_go = wait_until(|| gate.done.load(Ordering::SeqCst) == batch * (round + 1));
            assert!(let_go.await, "round {round} let go");
        }
        assert!(running.settle(Duration::from_secs(10)).await, "idle");
        let out: BTreeSet<u64> = seen.lock().expect("not poisoned")["out"]
            .iter()
            .map(order_of)
            .collect();
        assert_eq!(out, (0..total as u64).collect(), "every order, each once");
        assert_eq!(flow.routes()[0].stats().passed, total as u64);
        let left = running.stop(Duration::from_secs(5)).await;
        assert!(left.is_empty(), "nothing left: {left:?}");
        gate.most.load(Ordering::SeqCst)
    })
}

#[test]
fn a_route_with_concurrency_4_has_4_messages_in_processing_at_once_and_never_more() {
    assert_eq!(most_in_flight(&held_route("    concurrency: 4"), 20, 4), 4);
}

#[test]
fn without_concurrency_a_route_processes_one_message_at_a_time() {
    assert_eq!(most_in_flight(&held_route(""), 5, 1), 1);
}

#[test]
fn the_builder_sets_the_same_concurrency_as_the_file() {
    use eip_dsl::builder::{FlowBuilder, channel, route};
    let echo = tower::service_fn(|msg: Message| std::future::ready(Ok::<_, tower::BoxError>(msg)));
    let built = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("out", channel::point_to_point())
        .route(
            route::from("orders")
                .process("held")
                .to("out")
                .concurrency(4),
        )
        .service("held", echo)
        .plan(".")
        .unwrap_or_else(|e| panic!("{}", e.render()));
    let gate = Gate::new();
    let file = flow_of(&held_route("    concurrency: 4"), &gate.service());
    assert_eq!(built.routes[0].concurrency, 4);
    assert_eq!(file.routes()[0].concurrency(), 4);
    let zero = FlowBuilder::new()
        .channel("orders", channel::point_to_point())
        .channel("out", channel::point_to_point())
        .route(route::from("orders").to("out").concurrency(0))
        .plan(".")
        .expect_err("0 is refused");
    assert_eq!(
        zero.problems[0].message,
        "`concurrency` must be at least 1, found 0"
    );
}

const DURABLE: &str = "
channels:
  orders: {kind: point-to-point, durable: true}
  out: {kind: point-to-point, durable: true}
routes:
  - from: orders
    to: out
    concurrency: 8
";

#[test]
fn a_durable_route_with_concurrency_acknowledges_every_message_and_leaves_none_for_a_restart() {
    let scratch = Scratch::new("concurrency-durable");
    let data = scratch.0.join("data");
    let sent: Vec<Message> = (0..300).map(order).collect();
    let out = run_durable(DURABLE, &data, "orders", sent, Duration::ZERO);
    let orders: Vec<u64> = out.iter().map(order_of).collect();
    let once: BTreeSet<u64> = orders.iter().copied().collect();
    assert_eq!(orders.len(), 300, "each order once");
    assert_eq!(once, (0..300).collect());
    // A new process on the same store: nothing was left unacknowledged, so nothing comes again.
    let again = run_durable(DURABLE, &data, "orders", Vec::new(), Duration::ZERO);
    assert!(again.is_empty(), "{} messages came again", again.len());
}

/// A durable route of concurrency 8 that counts each order's arrivals (`arrive`), dedupes by
/// order, and fails the first call of each order for good (`flaky`, redelivery used up at
/// once) after every copy of it has arrived: the copies are in the route while the original
/// fails.
fn dedupe_route() -> String {
    "
channels:
  orders:
    kind: point-to-point
    durable: true
    redelivery: {max-attempts: 1}
  out: {kind: point-to-point, durable: true}
routes:
  - from: orders
    steps:
      - process: arrive
      - dedupe: '.order'
      - process: flaky
    to: out
    concurrency: 8
"
    .to_owned()
}

const COPIES: usize = 4;

fn dedupe_services() -> Services {
    let arrived: Arc<Mutex<HashMap<u64, usize>>> = Arc::default();
    let failed: Arc<Mutex<BTreeSet<u64>>> = Arc::default();
    let counting = arrived.clone();
    let arrive = tower::service_fn(move |msg: Message| {
        *counting
            .lock()
            .expect("not poisoned")
            .entry(order_of(&msg))
            .or_default() += 1;
        std::future::ready(Ok::<_, tower::BoxError>(msg))
    });
    let flaky = tower::service_fn(move |msg: Message| {
        let (arrived, failed) = (arrived.clone(), failed.clone());
        async move {
            let n = order_of(&msg);
            let first = failed.lock().expect("not poisoned").insert(n);
            if !first {
                return Ok::<_, tower::BoxError>(msg);
            }
            let all_in = wait_until(|| {
                arrived.lock().expect("not poisoned").get(&n).copied() == Some(COPIES)
            });
            if !all_in.await {
                return Err(format!("the copies of order {n} did not all arrive").into());
            }
            Err(format!("order {n} refused once").into())
        }
    });
    Services::new().add("arrive", arrive).add("flaky", flaky)
}

/// One run of [`dedupe_route`] on `data` with `messages`: what reached `out`, and the dead
/// letters.
fn run_dedupe(data: &Path, messages: Vec<Message>) -> (Vec<u64>, Vec<u64>) {
    let plan = load::load_str_with(
        &dedupe_route(),
        "flow.yaml",
        Path::new("."),
        &dedupe_services(),
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
    let store = StoreOptions {
        data_dir: data.to_owned(),
        max_bytes: None,
    };
    runtime().block_on(async {
        let flow = compile::compile_with(&plan, &store).expect("compiles");
        let seen = Outputs::default();
        let running = flow.start(output(&seen));
        let orders = queue(&flow, "orders");
        for msg in messages {
            orders.send(msg).await.expect("accepted");
        }
        assert!(
            running.settle(Duration::from_secs(20)).await,
            "idle in time: {:?}",
            running.counters()
        );
        let left = running.stop(Duration::from_secs(5)).await;
        assert!(left.is_empty(), "nothing left: {left:?}");
        let seen = seen.lock().expect("not poisoned");
        let of = |channel: &str| -> Vec<u64> {
            let mut orders: Vec<u64> = seen
                .get(channel)
                .into_iter()
                .flatten()
                .map(order_of)
                .collect();
            orders.sort_unstable();
            orders
        };
        (of("out"), of("dead-letters"))
    })
}

#[test]
fn a_copy_in_flight_waits_for_its_original_and_passes_when_the_original_failed() {
    let scratch = Scratch::new("concurrency-dedupe");
    let data = scratch.0.join("data");
    let keys = 25u64;
    // Each order's copies one after another: with 8 at once, two orders' copies are in the
    // route together.
    let copies = || {
        (0..keys)
            .flat_map(|n| std::iter::repeat_n(n, COPIES))
            .map(order)
            .collect::<Vec<_>>()
    };
    let (out, dead) = run_dedupe(&data, copies());
    let every: Vec<u64> = (0..keys).collect();
    assert_eq!(dead, every, "each original refused once, dead-lettered");
    assert_eq!(out, every, "a copy of each passed once its original failed");
    // A new process on the same store: the keys of the copies that passed were kept with
    // their acknowledgements, so every copy sent again is a duplicate.
    let (out, dead) = run_dedupe(&data, copies());
    assert!(out.is_empty(), "a kept key passed again: {out:?}");
    assert!(dead.is_empty(), "{dead:?}");
}

#[test]
fn a_throttle_keeps_its_rate_for_the_whole_route_whatever_the_concurrency() {
    let source = "
channels:
  orders: {kind: point-to-point}
  out: {kind: point-to-point}
routes:
  - from: orders
    steps:
      - throttle: 20/s
    to: out
    concurrency: 8
";
    let flow = flow_of(source, &Services::new());
    runtime().block_on(async {
        let seen = Outputs::default();
        let running = flow.start(output(&seen));
        let orders = queue(&flow, "orders");
        let started = Instant::now();
        for n in 0..11 {
            orders.send(order(n)).await.expect("accepted");
        }
        let all =
            wait_until(|| seen.lock().expect("not poisoned").get("out").map(Vec::len) == Some(11));
        assert!(all.await, "every order went on");
        // One every 50 ms: the 11th no sooner than 500 ms after the first.
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(490),
            "11 orders at 20/s in {took:?}"
        );
        running.stop(Duration::from_secs(5)).await;
    });
}

fn with_concurrency(value: &str, steps: &[&'static str]) -> Vec<String> {
    let mut lines = vec![
        "channels:".to_owned(),
        "  in: {kind: point-to-point}".to_owned(),
        "  out: {kind: point-to-point}".to_owned(),
        "routes:".to_owned(),
        "  - from: in".to_owned(),
        format!("    concurrency: {value}"),
    ];
    if !steps.is_empty() {
        lines.push("    steps:".to_owned());
        lines.extend(steps.iter().map(|s| format!("      - {s}")));
    }
    lines.push("    to: out".to_owned());
    lines
}

fn only_problem(value: &str, steps: &[&'static str]) -> eip_dsl::diagnostic::Problem {
    let lines = with_concurrency(value, steps);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    only(&lines)
}

#[test]
fn a_concurrency_that_is_not_a_whole_number_from_1_to_10000_is_refused_at_its_position() {
    for (value, message) in [
        ("0", "`concurrency` must be at least 1, found 0"),
        ("-3", "`concurrency` must be at least 1, found -3"),
        ("2.5", "`concurrency` must be a whole number, found 2.5"),
        ("10001", "`concurrency` must be at most 10000, found 10001"),
        ("99999999999999999999", "`concurrency` must be"),
    ] {
        let p = only_problem(value, &[]);
        assert!(p.message.starts_with(message), "{value}: {}", p.message);
        assert_eq!(at(&p), (6, 18), "{value}");
        assert_eq!(p.key.as_deref(), Some("routes[0].concurrency"));
        assert!(help(&p).contains("from 1"), "{}", help(&p));
    }
    let p = only_problem("four", &[]);
    assert!(p.message.contains("`concurrency`"), "{}", p.message);
    assert_eq!(at(&p), (6, 18));
    let lines = with_concurrency("10000", &[]);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let plan = support::validate::load(&lines).expect("10000 is allowed");
    assert_eq!(plan.routes[0].concurrency, 10_000);
}

#[test]
fn concurrency_above_1_is_refused_on_a_route_that_aggregates_or_resequences() {
    for step in ["aggregate: 10", "resequence: {}"] {
        let kind = step.split(':').next().unwrap_or_default();
        let p = only_problem("4", &[step]);
        assert!(
            p.message
                .contains(&format!("`concurrency: 4` and a `{kind}` step")),
            "{}",
            p.message
        );
        assert!(p.message.contains("one at a time"), "{}", p.message);
        assert_eq!(at(&p), (6, 18));
        assert_eq!(p.labels.len(), 1, "the step is pointed at");
        assert_eq!(p.labels[0].at.line, 8);
        // One at a time, written or not, is allowed.
        let lines = with_concurrency("1", &[step]);
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert!(
            support::validate::load(&lines).is_ok(),
            "{step} with concurrency 1"
        );
    }
}

#[test]
fn eip_graph_writes_a_routes_concurrency_under_its_name() {
    let lines = with_concurrency("16", &[]);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let plan = support::validate::load(&lines).expect("validates");
    for drawn in [eip_dsl::graph::dot(&plan), eip_dsl::graph::mermaid(&plan)] {
        assert!(drawn.contains("concurrency 16"), "{drawn}");
    }
    let lines = with_concurrency("1", &[]);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let plan = support::validate::load(&lines).expect("validates");
    assert!(!eip_dsl::graph::dot(&plan).contains("concurrency"));
}
