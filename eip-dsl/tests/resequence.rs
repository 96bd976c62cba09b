//! The `resequence` step (the Resequencer) in a flow file: in order and out of order, a gap
//! given up at the gap timeout (and counted), duplicates and late numbers, the `max-held`
//! bound, invalid numbers, the dry run's note, the problems `eip validate` reports, any
//! permutation coming out in order, and on a durable route what a restart keeps.

use std::path::Path;
use std::time::Duration;

use eip_core::Message;
use eip_core::message::DeathReason;
use eip_dsl::compile::{self, Flow, InputMessage};
use eip_dsl::load;
use eip_dsl::step::ResequenceConfig;
use eip_steps::resequence::ResequencerStats;
use proptest::prelude::*;

mod support {
    pub mod durable_run;
    pub mod one_route;
    pub mod scratch;
    pub mod stopping;
}

use support::durable_run::run_durable;
use support::one_route::{drain, flow, problems, run_all, yaml_with};
use support::scratch::Scratch;
use support::stopping::run_then_stop;

/// A message numbered `n` by the `sequence-number` header, its payload `n`.
fn numbered(n: i64) -> Message {
    Message::builder(format!("{n}"))
        .header("sequence-number", n)
        .build()
}

/// A message whose payload `{"n": n}` carries its number.
fn carrying(n: u64) -> Message {
    Message::new(format!(r#"{{"n": {n}}}"#))
}

/// The payloads of `messages`, as text.
fn payloads(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.payload_str().unwrap_or("<not text>").to_owned())
        .collect()
}

fn texts(numbers: &[u64]) -> Vec<String> {
    numbers.iter().map(u64::to_string).collect()
}

/// The flow of one route through `steps`, and a way to read its resequencer's counters.
fn counted(steps: &str) -> (Flow, impl Fn() -> ResequencerStats) {
    let plan = match load::load_str(&yaml_with("", steps), "flow.yaml", Path::new(".")) {
        Ok(plan) => plan,
        Err(errors) => panic!("{}", errors.render()),
    };
    let config = plan.routes[0].steps[0].config.clone();
    let flow = compile::compile(&plan).expect("the flow compiles");
    let stats = move || {
        // The step's configuration, not the `Arc` holding it.
        (*config)
            .as_any()
            .downcast_ref::<ResequenceConfig>()
            .expect("the first step is a resequence")
            .stats()
    };
    (flow, stats)
}

/// A current-thread runtime with its clock paused: timeouts pass when the test says.
fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime")
}

#[test]
fn messages_in_order_go_straight_through() {
    let (f, stats) = counted("      - resequence: {}");
    let (out, dead) = run_all(&f, (1..=4).map(numbered).collect());
    assert!(dead.is_empty());
    assert_eq!(payloads(&out), texts(&[1, 2, 3, 4]));
    let s = stats();
    assert_eq!((s.held, s.released, s.gaps), (0, 4, 0));
}

#[test]
fn messages_out_of_order_are_held_until_the_numbers_before_them_arrive() {
    let f = flow("      - resequence: '.n'");
    paused().block_on(async {
        let route = &f.routes()[0];
        for n in [3, 4] {
            route.handle(carrying(n)).await.expect("held");
        }
        assert!(drain(&f, "out").await.is_empty(), "waiting for 1");
        route.handle(carrying(1)).await.expect("released");
        assert_eq!(payloads(&drain(&f, "out").await), [r#"{"n": 1}"#]);
        route.handle(carrying(2)).await.expect("released");
        let out = drain(&f, "out").await;
        assert_eq!(
            payloads(&out),
            [r#"{"n": 2}"#, r#"{"n": 3}"#, r#"{"n": 4}"#]
        );
    });
}

#[test]
fn messages_handled_at_the_same_time_still_go_on_in_order() {
    let f = flow("      - resequence: {}");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let out = runtime.block_on(async {
        let route = &f.routes()[0];
        let handled = (1..=50)
            .rev()
            .map(|n| route.handle(numbered(n)))
            .collect::<Vec<_>>();
        for done in futures::future::join_all(handled).await {
            done.expect("the route takes it");
        }
        drain(&f, "out").await
    });
    assert_eq!(payloads(&out), texts(&(1..=50).collect::<Vec<_>>()));
}

#[test]
fn a_sequence_can_start_at_another_number_and_be_read_from_a_header() {
    let f = flow("      - resequence: {header: x-seq, start: 10}");
    let at = |n: i64| Message::builder(format!("{n}")).header("x-seq", n).build();
    let (out, dead) = run_all(&f, vec![at(11), at(10), at(12)]);
    assert!(dead.is_empty());
    assert_eq!(payloads(&out), texts(&[10, 11, 12]));
}

#[test]
fn a_gap_is_given_up_at_the_gap_timeout_counted_and_a_late_number_goes_on() {
    let (f, stats) = counted("      - resequence: {gap-timeout: 5s}");
    paused().block_on(async {
        let route = &f.routes()[0];
        for n in [1, 3, 4] {
            route.handle(numbered(n)).await.expect("taken");
        }
        assert_eq!(payloads(&drain(&f, "out").await), texts(&[1]));
        tokio::time::sleep(Duration::from_millis(4_900)).await;
        assert!(drain(&f, "out").await.is_empty(), "still waiting for 2");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            payloads(&drain(&f, "out").await),
            texts(&[3, 4]),
            "released in order without another message"
        );
        let s = stats();
        assert_eq!((s.gaps, s.missing, s.overflows), (1, 1, 0));

        route.handle(numbered(2)).await.expect("late");
        assert_eq!(payloads(&drain(&f, "out").await), texts(&[2]));
        route.handle(numbered(5)).await.expect("next");
        assert_eq!(payloads(&drain(&f, "out").await), texts(&[5]));
        let s = stats();
        assert_eq!((s.late, s.released), (1, 5));
    });
}

#[test]
fn a_number_released_or_held_already_is_a_dropped_duplicate() {
    let (f, stats) = counted("      - resequence: {}");
    let (out, dead) = run_all(&f, [1, 1, 3, 3, 2, 2].into_iter().map(numbered).collect());
    assert!(dead.is_empty());
    assert_eq!(payloads(&out), texts(&[1, 2, 3]));
    assert_eq!(f.routes()[0].stats().duplicates, 3);
    assert_eq!(stats().duplicates, 3);
}

#[test]
fn one_more_than_max_held_gives_the_first_gap_up() {
    let (f, stats) = counted("      - resequence: {max-held: 2}");
    paused().block_on(async {
        let route = &f.routes()[0];
        for n in [3, 5] {
            route.handle(numbered(n)).await.expect("held");
        }
        assert!(drain(&f, "out").await.is_empty());
        route.handle(numbered(6)).await.expect("overflows");
        assert_eq!(
            payloads(&drain(&f, "out").await),
            texts(&[3]),
            "1 and 2 given up: 3 goes, 5 and 6 wait for 4"
        );
        let s = stats();
        assert_eq!((s.overflows, s.gaps, s.missing), (1, 1, 2));
        route.handle(numbered(4)).await.expect("released");
        assert_eq!(payloads(&drain(&f, "out").await), texts(&[4, 5, 6]));
    });
}

#[test]
fn a_message_without_a_readable_number_is_invalid() {
    let f = flow("      - resequence: {}");
    let (out, dead) = run_all(
        &f,
        vec![
            Message::new("no header"),
            numbered(0),
            Message::builder("text")
                .header("sequence-number", "two")
                .build(),
        ],
    );
    assert!(out.is_empty());
    assert_eq!(dead.len(), 3);
    for msg in &dead {
        let death = msg.death().expect("readable").expect("a death record");
        assert_eq!(death.reason, DeathReason::Invalid);
        let error = death.error.unwrap_or_default();
        assert!(error.contains("sequence number"), "{error}");
    }
    assert_eq!(f.routes()[0].stats().invalid, 3);

    let f = flow("      - resequence: '.n'");
    let (out, dead) = run_all(&f, vec![Message::new(r#"{"n": "first"}"#), carrying(1)]);
    assert_eq!(payloads(&out), [r#"{"n": 1}"#]);
    assert_eq!(dead.len(), 1);
}

#[test]
fn the_dry_run_says_what_the_resequencer_does() {
    let f = flow("      - resequence: {key: '.n', gap-timeout: 2s}");
    let input = |n: u64| {
        InputMessage::parse(&format!(r#"{{"to": "orders", "payload": {{"n": {n}}}}}"#))
            .expect("an input line")
    };
    let report = f.dry_run_steps(&input(3)).expect("a report");
    assert_eq!(
        report.steps[0].does,
        "resequence by .n from 1, gap timeout 2s, at most 10000 held"
    );
    assert!(report.steps[0].out.is_empty(), "held");
    assert_eq!(report.steps[0].notes, ["holds 3, waiting for 1"]);

    let report = f.dry_run_steps(&input(1)).expect("a report");
    assert_eq!(report.steps[0].out.len(), 1);
    assert_eq!(report.steps[0].notes, ["releases 1 and 0 held after it"]);
}

#[test]
fn problems_are_reported_with_help() {
    let text = problems("      - resequence: {start: 0}");
    assert!(
        text.contains("`start` must be a whole number of at least 1"),
        "{text}"
    );

    let text = problems("      - resequence: {max-held: 0}");
    assert!(
        text.contains("`max-held` must be a whole number of at least 1"),
        "{text}"
    );

    let text = problems("      - resequence: {gap-timeout: 0s}");
    assert!(text.contains("gap-timeout"), "{text}");

    let text = problems("      - resequence: {gap-timeout: soon}");
    assert!(text.contains("gap-timeout"), "{text}");

    let text = problems("      - resequence: {key: '.n', header: x-seq}");
    assert!(text.contains("contradict"), "{text}");

    let text = problems("      - resequence: '.n +'");
    assert!(text.contains("invalid jq"), "{text}");

    let text = problems("      - resequence: {gap-timout: 5s}");
    assert!(text.contains("did you mean `gap-timeout`?"), "{text}");

    let broker = "
channels:
  orders: {kind: point-to-point, store: {rabbitmq: {url: 'amqp://127.0.0.1:5672'}}}
  out: {kind: point-to-point}
routes:
  - from: orders
    steps:
      - resequence: {}
    to: out
";
    let text = match load::load_str(broker, "flow.yaml", Path::new(".")) {
        Ok(_) => panic!("a resequence on a broker's channel validated"),
        Err(errors) => errors.render(),
    };
    assert!(text.contains("kept in a broker"), "{text}");
    assert!(text.contains("durable: true"), "{text}");
}

/// A durable route through `resequence: STEP`.
fn durable(step: &str) -> String {
    format!(
        "
channels:
  orders: {{kind: point-to-point, durable: true}}
  out: {{kind: point-to-point, durable: true}}
routes:
  - name: order
    from: orders
    steps:
      - resequence: {step}
    to: out
"
    )
}

fn run(yaml: &str, data: &Path, numbers: &[i64], linger: Duration) -> Vec<String> {
    let messages = numbers.iter().map(|&n| numbered(n)).collect();
    payloads(&run_durable(yaml, data, "orders", messages, linger))
}

#[test]
fn on_a_durable_route_held_messages_and_their_order_survive_a_restart() {
    let scratch = Scratch::new("resequence-durable");
    let data = scratch.0.join("data");
    let yaml = durable("{}");
    assert_eq!(run(&yaml, &data, &[5, 3, 4], Duration::ZERO), texts(&[]));
    // A new process reads 3, 4 and 5 back; 2 is held with them; 1 releases them all in order.
    assert_eq!(run(&yaml, &data, &[2], Duration::ZERO), texts(&[]));
    assert_eq!(
        run(&yaml, &data, &[1, 7], Duration::ZERO),
        texts(&[1, 2, 3, 4, 5])
    );
    // 7 is still held, waiting for 6; 5 came out already, so it is a duplicate.
    assert_eq!(run(&yaml, &data, &[5, 6], Duration::ZERO), texts(&[6, 7]));
    assert_eq!(run(&yaml, &data, &[], Duration::ZERO), texts(&[]));
}

#[test]
fn on_a_durable_route_the_next_number_survives_a_restart() {
    let scratch = Scratch::new("resequence-next");
    let data = scratch.0.join("data");
    let yaml = durable("{start: 10}");
    assert_eq!(
        run(&yaml, &data, &[11, 10], Duration::ZERO),
        texts(&[10, 11])
    );
    // After the restart 12 is next, not the configured start: it goes straight through, and
    // 10 and 11 are duplicates.
    assert_eq!(
        run(&yaml, &data, &[10, 12, 11, 13], Duration::ZERO),
        texts(&[12, 13])
    );
    assert_eq!(run(&yaml, &data, &[15], Duration::ZERO), texts(&[]));
    assert_eq!(run(&yaml, &data, &[14], Duration::ZERO), texts(&[14, 15]));
}

#[test]
fn on_a_durable_route_a_gap_is_given_up_after_a_restart_and_a_late_number_still_goes_on() {
    let scratch = Scratch::new("resequence-gap");
    let data = scratch.0.join("data");
    let yaml = durable("{gap-timeout: 4s}");
    // 1 goes through; 3 and 4 wait for 2. The process stops 2 s later, before the timeout.
    assert_eq!(
        run(&yaml, &data, &[1, 4, 3], Duration::from_secs(2)),
        texts(&[1])
    );
    // Read back, they wait out the rest of the gap timeout with no new message, then go on:
    // within 3 s, so the wait counts from when the gap began, not from the restart.
    assert_eq!(
        run(&yaml, &data, &[], Duration::from_secs(3)),
        texts(&[3, 4])
    );
    // 2 was skipped by that gap: after another restart it is late, and still goes on; 5 is
    // next.
    assert_eq!(run(&yaml, &data, &[2, 5], Duration::ZERO), texts(&[2, 5]));
    assert_eq!(run(&yaml, &data, &[], Duration::ZERO), texts(&[]));
}

#[test]
fn on_a_durable_route_max_held_still_gives_the_first_gap_up() {
    let scratch = Scratch::new("resequence-bound");
    let data = scratch.0.join("data");
    let yaml = durable("{max-held: 2}");
    assert_eq!(run(&yaml, &data, &[3, 4], Duration::ZERO), texts(&[]));
    // Read back: two held. One more gives the gap before 3 up.
    assert_eq!(run(&yaml, &data, &[6], Duration::ZERO), texts(&[3, 4]));
    assert_eq!(run(&yaml, &data, &[5], Duration::ZERO), texts(&[5, 6]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever order the numbers 1..=N arrive in, they go on as 1..=N, nothing held after.
    #[test]
    fn any_permutation_comes_out_in_order(order in (1u64..40).prop_flat_map(|n| Just((1..=n).collect::<Vec<u64>>()).prop_shuffle())) {
        let f = flow("      - resequence: {}");
        let messages = order.iter().map(|&n| numbered(n as i64)).collect();
        let (out, dead) = run_all(&f, messages);
        prop_assert!(dead.is_empty());
        let mut want = order.clone();
        want.sort_unstable();
        prop_assert_eq!(payloads(&out), texts(&want));
    }
}

/// The payloads that reached `out`, in order.
fn out_payloads(seen: &[(String, Message)]) -> Vec<String> {
    let out: Vec<Message> = seen
        .iter()
        .filter(|(c, _)| c == "out")
        .map(|(_, m)| m.clone())
        .collect();
    payloads(&out)
}

#[test]
fn on_a_route_in_memory_what_is_held_goes_out_in_order_when_the_flow_stops() {
    // 1 and 2 never come: 5, 3 and 4 are held, with no gap timeout to give the gap up.
    let yaml = yaml_with("", "      - resequence: '.n'");
    let messages = [5, 3, 4].into_iter().map(carrying).collect();
    let (seen, _) = run_then_stop(&yaml, messages);
    assert_eq!(
        out_payloads(&seen),
        [r#"{"n": 3}"#, r#"{"n": 4}"#, r#"{"n": 5}"#]
    );
}
