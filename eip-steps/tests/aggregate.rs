//! The Aggregator's completion rules, timeouts, bounds and bad input.

use std::convert::Infallible;
use std::future::Ready;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use eip_core::Message;
use eip_steps::aggregate::{
    AggregateError, Aggregated, Aggregator, AggregatorConfig, ConfigProblem, Decision, INCOMPLETE,
    Incomplete, IncompleteGroup, Key, Overflow, Rule, SEQUENCE_NUMBER, SEQUENCE_SIZE,
};
use tower::{Service, ServiceExt};

/// Records what it is sent.
#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Message>>>);

impl Collect {
    fn taken(&self) -> Vec<Message> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
    fn payloads(&self) -> Vec<String> {
        self.taken()
            .iter()
            .map(|m| m.payload_str().unwrap_or("").to_owned())
            .collect()
    }
}

impl Service<Message> for Collect {
    type Response = ();
    type Error = Infallible;
    type Future = Ready<Result<(), Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, msg: Message) -> Self::Future {
        self.0.lock().unwrap().push(msg);
        std::future::ready(Ok(()))
    }
}

fn msg(group: &str, payload: &str) -> Message {
    Message::builder(payload.to_owned())
        .correlation_id(group)
        .build()
}

fn part(group: &str, payload: &str, number: i64, size: Option<i64>) -> Message {
    let mut b = Message::builder(payload.to_owned())
        .correlation_id(group)
        .header(SEQUENCE_NUMBER, number);
    if let Some(s) = size {
        b = b.header(SEQUENCE_SIZE, s);
    }
    b.build()
}

async fn send(
    agg: &mut Aggregator<Collect>,
    m: Message,
) -> Result<Aggregated<()>, AggregateError<Infallible>> {
    agg.ready().await?.call(m).await
}

fn aggregator(config: AggregatorConfig) -> (Aggregator<Collect>, Collect) {
    let out = Collect::default();
    (Aggregator::new(out.clone(), config), out)
}

#[tokio::test]
async fn a_group_completes_at_its_size_as_a_json_array_in_arrival_order() {
    let config = Aggregator::builder().complete_at_size(3).build().unwrap();
    let (mut agg, out) = aggregator(config);
    for (g, p) in [
        ("a", "1"),
        ("b", "10"),
        ("a", "\"two\""),
        ("a", "{\"n\":3}"),
    ] {
        send(&mut agg, msg(g, p)).await.unwrap();
    }
    assert_eq!(out.payloads(), [r#"[1,"two",{"n":3}]"#]);
    assert_eq!(agg.open_groups(), 1, "group b is still open");
    assert_eq!(agg.stats().completed, 1);
}

#[tokio::test]
async fn the_aggregate_has_a_new_id_the_key_as_correlation_id_and_the_first_headers() {
    let config = Aggregator::builder()
        .correlate_by(Key::header("sensor"))
        .complete_at_size(2)
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    let first = Message::builder("1")
        .header("sensor", "s-1")
        .header("desk", "first")
        .build();
    let second = Message::builder("2")
        .header("sensor", "s-1")
        .header("desk", "second")
        .build();
    let ids = [first.id(), second.id()];
    send(&mut agg, first).await.unwrap();
    let done = send(&mut agg, second).await.unwrap();
    assert!(matches!(
        done,
        Aggregated::Released {
            count: 2,
            rule: Rule::Size,
            ..
        }
    ));
    let aggregate = out.taken().remove(0);
    assert!(!ids.contains(&aggregate.id()));
    assert_eq!(aggregate.correlation_id().unwrap(), Some("s-1"));
    assert_eq!(
        aggregate.headers().get("desk").unwrap().as_str(),
        Some("first")
    );
    assert_eq!(aggregate.content_type().unwrap(), Some("application/json"));
}

#[tokio::test]
async fn a_group_completes_when_the_predicate_over_it_holds() {
    let config = Aggregator::builder()
        .complete_when(|msgs| msgs.iter().any(|m| m.payload_str() == Some("\"end\"")))
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    for p in ["1", "2", "\"end\""] {
        send(&mut agg, msg("g", p)).await.unwrap();
    }
    assert_eq!(out.payloads(), [r#"[1,2,"end"]"#]);
}

#[tokio::test]
async fn all_parts_completes_when_every_number_is_there_in_sequence_order() {
    let config = Aggregator::builder()
        .complete_with_all_parts()
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, part("s", "3", 3, None)).await.unwrap();
    send(&mut agg, part("s", "1", 1, Some(3))).await.unwrap();
    let dup = send(&mut agg, part("s", "1", 1, Some(3))).await.unwrap();
    assert_eq!(
        dup,
        Aggregated::Duplicate {
            group: "s".into(),
            number: 1
        }
    );
    assert!(out.taken().is_empty(), "part 2 is missing");
    let done = send(&mut agg, part("s", "2", 2, Some(3))).await.unwrap();
    assert!(matches!(
        done,
        Aggregated::Released {
            rule: Rule::AllParts,
            count: 3,
            ..
        }
    ));
    let aggregate = out.taken().remove(0);
    assert_eq!(aggregate.payload_str(), Some("[1,2,3]"));
    assert!(!aggregate.headers().contains(SEQUENCE_NUMBER));
    assert!(!aggregate.headers().contains(SEQUENCE_SIZE));
    assert_eq!(agg.stats().duplicates, 1);
}

#[tokio::test]
async fn a_late_copy_of_a_part_of_a_completed_split_is_a_duplicate() {
    let config = Aggregator::builder()
        .complete_with_all_parts()
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, part("s", "1", 1, Some(1))).await.unwrap();
    let late = send(&mut agg, part("s", "1", 1, Some(1))).await.unwrap();
    assert_eq!(
        late,
        Aggregated::Duplicate {
            group: "s".into(),
            number: 1
        }
    );
    assert_eq!(out.taken().len(), 1);
    assert_eq!(agg.open_groups(), 0);
}

#[tokio::test]
async fn conflicting_sequence_headers_make_the_part_invalid() {
    let config = Aggregator::builder()
        .complete_with_all_parts()
        .build()
        .unwrap();
    let (mut agg, _) = aggregator(config);
    send(&mut agg, part("s", "1", 1, Some(3))).await.unwrap();
    for bad in [
        part("s", "2", 2, Some(4)),
        part("s", "5", 5, None),
        part("s", "9", 9, Some(3)),
    ] {
        let err = send(&mut agg, bad).await.unwrap_err();
        assert!(err.is_permanent(), "{err}");
        assert!(matches!(err, AggregateError::Invalid { .. }));
    }
}

#[tokio::test]
async fn a_message_without_a_correlation_key_is_handed_back_invalid() {
    let config = Aggregator::builder().complete_at_size(2).build().unwrap();
    let (mut agg, _) = aggregator(config);
    let orphan = Message::new("1");
    let id = orphan.id();
    let err = send(&mut agg, orphan).await.unwrap_err();
    assert!(err.to_string().contains("correlation-id"), "{err}");
    let back = err.into_messages();
    assert_eq!(back[0].id(), id);
    let unreadable = Message::builder("1")
        .correlation_id("g")
        .header(SEQUENCE_NUMBER, "x")
        .build();
    assert!(send(&mut agg, unreadable).await.is_err());
    assert_eq!(agg.stats().invalid, 2);
}

#[tokio::test]
async fn a_computed_key_that_fails_makes_the_message_invalid() {
    let config = Aggregator::builder()
        .correlate_by(Key::computed(|m| {
            m.json_value()
                .ok()
                .and_then(|v| v["sensor"].as_str().map(str::to_owned))
                .ok_or_else(|| "no sensor".to_owned())
        }))
        .complete_at_size(2)
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    for p in [r#"{"sensor":"a","v":1}"#, r#"{"sensor":"a","v":2}"#] {
        send(&mut agg, Message::new(p)).await.unwrap();
    }
    assert_eq!(out.taken().len(), 1);
    let err = send(&mut agg, Message::new("not json")).await.unwrap_err();
    assert!(err.to_string().contains("no sensor"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_timeout_releases_an_incomplete_group_without_a_new_message() {
    let config = Aggregator::builder()
        .complete_at_size(10)
        .complete_after(Duration::from_secs(5))
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, msg("g", "1")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    send(&mut agg, msg("g", "2")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_999)).await;
    assert!(
        out.taken().is_empty(),
        "not yet 5 s since the first message"
    );
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(out.payloads(), ["[1,2]"]);
    assert_eq!(agg.stats().timed_out, 1);
    assert_eq!(agg.stats().released_incomplete, 1);
    assert_eq!(agg.open_groups(), 0);
}

#[tokio::test(start_paused = true)]
async fn after_a_timeout_a_new_message_of_the_key_opens_a_new_group() {
    let config = Aggregator::builder()
        .complete_at_size(2)
        .complete_after(Duration::from_secs(1))
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, msg("g", "1")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    send(&mut agg, msg("g", "2")).await.unwrap();
    send(&mut agg, msg("g", "3")).await.unwrap();
    assert_eq!(out.payloads(), ["[1]", "[2,3]"]);
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_group_can_go_to_the_dead_letters_as_incomplete() {
    let dead: Arc<Mutex<Vec<IncompleteGroup>>> = Arc::default();
    let sink = dead.clone();
    let config = Aggregator::builder()
        .complete_at_size(3)
        .complete_after(Duration::from_secs(1))
        .on_incomplete(Incomplete::DeadLetter)
        .dead_letter_callback(move |g| sink.lock().unwrap().push(g))
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, msg("g", "1")).await.unwrap();
    send(&mut agg, msg("g", "2")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(out.taken().is_empty());
    let dead = dead.lock().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].reason, INCOMPLETE);
    assert_eq!(dead[0].key, "g");
    assert_eq!(dead[0].messages.len(), 2);
    assert_eq!(agg.stats().dead_lettered, 2);
}

#[tokio::test(start_paused = true)]
async fn the_timer_stops_when_the_aggregator_is_dropped() {
    let config = Aggregator::builder()
        .complete_at_size(3)
        .complete_after(Duration::from_secs(1))
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, msg("g", "1")).await.unwrap();
    drop(agg);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        out.taken().is_empty(),
        "the dropped aggregator released nothing"
    );
    assert_eq!(
        Arc::strong_count(&out.0),
        1,
        "the timer task let its service go"
    );
}

#[tokio::test]
async fn past_the_bound_the_oldest_group_is_given_up() {
    let config = Aggregator::builder()
        .complete_at_size(5)
        .max_groups(2, Overflow::GiveUpOldest)
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    for (g, p) in [("a", "1"), ("b", "2"), ("a", "3"), ("c", "4")] {
        send(&mut agg, msg(g, p)).await.unwrap();
    }
    assert_eq!(
        out.payloads(),
        ["[1,3]"],
        "a, the oldest, released as it was"
    );
    assert_eq!(agg.open_groups(), 2);
    assert_eq!(agg.stats().overflowed, 1);
}

#[tokio::test]
async fn past_the_bound_a_refusing_aggregator_hands_the_message_back() {
    let config = Aggregator::builder()
        .complete_at_size(5)
        .max_groups(1, Overflow::Refuse)
        .build()
        .unwrap();
    let (mut agg, _) = aggregator(config);
    send(&mut agg, msg("a", "1")).await.unwrap();
    send(&mut agg, msg("a", "2")).await.unwrap();
    let err = send(&mut agg, msg("b", "3")).await.unwrap_err();
    assert!(matches!(err, AggregateError::Full { open: 1, .. }));
    assert!(!err.is_permanent());
    assert_eq!(agg.stats().refused, 1);
}

#[tokio::test]
async fn a_group_that_does_not_combine_goes_to_the_dead_letters_or_comes_back() {
    let config = Aggregator::builder().complete_at_size(2).build().unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, msg("g", "1")).await.unwrap();
    let err = send(&mut agg, msg("g", "not json")).await.unwrap_err();
    assert!(err.is_permanent());
    assert_eq!(err.into_messages().len(), 2, "both messages come back");
    assert!(out.taken().is_empty());

    let dead: Arc<Mutex<Vec<IncompleteGroup>>> = Arc::default();
    let sink = dead.clone();
    let config = Aggregator::builder()
        .complete_at_size(2)
        .dead_letter_callback(move |g| sink.lock().unwrap().push(g))
        .build()
        .unwrap();
    let (mut agg, _) = aggregator(config);
    send(&mut agg, msg("g", "1")).await.unwrap();
    let done = send(&mut agg, msg("g", "not json")).await.unwrap();
    assert_eq!(
        done,
        Aggregated::DeadLettered {
            group: "g".into(),
            count: 2
        }
    );
    assert_eq!(dead.lock().unwrap()[0].reason, "invalid");
}

#[tokio::test]
async fn a_caller_combination_replaces_the_json_array() {
    let config = Aggregator::builder()
        .complete_at_size(2)
        .combine_with(|msgs| {
            let text: Vec<&str> = msgs.iter().filter_map(Message::payload_str).collect();
            Ok(text.join("+").into())
        })
        .build()
        .unwrap();
    let (mut agg, out) = aggregator(config);
    send(&mut agg, msg("g", "a")).await.unwrap();
    send(&mut agg, msg("g", "b")).await.unwrap();
    assert_eq!(out.payloads(), ["a+b"]);
}

#[tokio::test]
async fn peek_tells_what_would_happen_and_changes_nothing() {
    let config = Aggregator::builder().complete_at_size(3).build().unwrap();
    let (mut agg, _) = aggregator(config);
    send(&mut agg, msg("g", "1")).await.unwrap();
    send(&mut agg, msg("g", "2")).await.unwrap();
    let held = agg.peek(&msg("h", "1"));
    assert_eq!(held.to_string(), "held in group h, 1 of 3");
    let completes = agg.peek(&msg("g", "3"));
    assert_eq!(
        completes,
        Decision::Completes {
            group: "g".into(),
            count: 3,
            rule: Rule::Size
        }
    );
    assert!(matches!(
        agg.peek(&Message::new("x")),
        Decision::Invalid { .. }
    ));
    assert_eq!(agg.open_groups(), 1);
    assert_eq!(agg.stats().completed, 0);
}

#[test]
fn a_configuration_reports_every_problem() {
    let err = Aggregator::builder()
        .complete_at_size(0)
        .max_groups(0, Overflow::Refuse)
        .on_incomplete(Incomplete::DeadLetter)
        .build()
        .unwrap_err();
    assert_eq!(
        err.0,
        [
            ConfigProblem::ZeroSize,
            ConfigProblem::ZeroMaxGroups,
            ConfigProblem::NoDeadLetters
        ]
    );
    let none = Aggregator::builder().build().unwrap_err();
    assert_eq!(none.0, [ConfigProblem::NoCompletion]);
}

#[tokio::test]
async fn aggregators_from_one_layer_keep_their_own_groups_and_share_counters() {
    use tower::Layer;
    let config = Aggregator::builder().complete_at_size(2).build().unwrap();
    let layer = Aggregator::layer(config);
    let (one_out, two_out) = (Collect::default(), Collect::default());
    let mut one = layer.layer(one_out.clone());
    let mut two = layer.layer(two_out.clone());
    send(&mut one, msg("g", "1")).await.unwrap();
    send(&mut two, msg("g", "2")).await.unwrap();
    assert!(one_out.taken().is_empty() && two_out.taken().is_empty());
    send(&mut two, msg("g", "3")).await.unwrap();
    assert_eq!(two_out.payloads(), ["[2,3]"]);
    assert_eq!(layer.stats().completed, 1);
    assert_eq!(layer.stats().held, 3);
}
