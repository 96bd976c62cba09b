//! The Splitter: its parts' sequence headers, streamed and in memory, and the service's
//! ordering and completion.
#![cfg(feature = "csv")]

use std::sync::{Arc, Mutex};
use std::task::Poll;

use bytes::Bytes;
use eip_core::Message;
use eip_core::message::names;
use eip_steps::format::{CsvOptions, Format, Reason};
use eip_steps::split::{Split, SplitError, SplitService};
use proptest::prelude::*;
use tower::{Service, ServiceExt, service_fn};

fn original() -> Message {
    Message::builder("sku,qty\nA,1\nB\nC,3\n")
        .subject("orders.csv")
        .content_type("text/csv")
        .header("file-name", "orders.csv")
        .header(names::REDELIVERY_COUNT, 2_i64)
        .build()
}

#[test]
fn every_part_carries_the_originals_id_its_number_the_size_and_the_originals_headers() {
    let original = original();
    let parts = Split::csv(CsvOptions::new()).parts(&original);
    assert_eq!(parts.len(), 3);
    let bad = parts[1].as_ref().unwrap_err();
    assert_eq!(
        (bad.line, &bad.reason),
        (
            3,
            &Reason::FieldCount {
                expected: 2,
                found: 1
            }
        )
    );
    let good: Vec<&Message> = parts.iter().filter_map(|p| p.as_ref().ok()).collect();
    let id = original.id().to_string();
    for (i, part) in good.iter().enumerate() {
        assert_ne!(part.id(), original.id(), "a part is a new message");
        assert_eq!(part.correlation_id().unwrap(), Some(id.as_str()));
        assert_eq!(
            part.sequence_number().unwrap(),
            Some(i as u64 + 1),
            "malformed takes no number"
        );
        assert_eq!(part.sequence_size().unwrap(), Some(2));
        assert_eq!(part.subject().unwrap(), Some("orders.csv"));
        assert_eq!(
            part.headers().get("file-name").and_then(|v| v.as_str()),
            Some("orders.csv")
        );
        assert_eq!(part.content_type().unwrap(), Some("application/json"));
        assert_eq!(
            part.redelivery_count().unwrap(),
            0,
            "a part was never delivered before"
        );
    }
    assert_eq!(good[1].payload_str(), Some(r#"{"sku":"C","qty":"3"}"#));
}

#[test]
fn a_malformed_record_becomes_a_message_with_its_text_and_the_originals_id() {
    let original = original();
    let split = Split::csv(CsvOptions::new());
    let parts = split.parts(&original);
    let bad = parts[1].as_ref().unwrap_err();
    let invalid = split.malformed_message(&original, bad);
    assert_eq!(invalid.payload_str(), Some("B"));
    let id = original.id().to_string();
    assert_eq!(invalid.correlation_id().unwrap(), Some(id.as_str()));
    assert_eq!(
        invalid.content_type().unwrap(),
        None,
        "the record is not JSON"
    );
    assert_eq!(invalid.sequence_number().unwrap(), None);
    assert_eq!(
        invalid.headers().get("line").and_then(|v| v.as_int()),
        Some(3),
        "the line the record started on"
    );
    assert_eq!(invalid.subject().unwrap(), Some("orders.csv"));
    assert_eq!(bad.to_string(), "line 3: expected 2 fields, found 1");
}

#[test]
fn a_line_keeps_the_originals_content_type() {
    let original = Message::builder("a\nb").content_type("text/plain").build();
    for part in Split::lines().parts(&original) {
        assert_eq!(part.unwrap().content_type().unwrap(), Some("text/plain"));
    }
}

#[test]
fn a_payload_with_no_records_has_no_parts() {
    assert!(Split::json_lines().parts(&Message::new("\n \n")).is_empty());
    assert!(
        Split::csv(CsvOptions::new())
            .parts(&Message::new("only,a,header\n"))
            .is_empty()
    );
}

#[tokio::test]
async fn a_streamed_split_gives_the_size_on_its_last_part_only() {
    let original = original();
    let input: &[u8] = b"{\"n\":1}\nnope\n{\"n\":2}\n\n{\"n\":3}\n{bad";
    let reader = tokio::io::BufReader::with_capacity(4, input);
    let mut stream = Split::json_lines().stream(&original, reader);
    let (mut sequence, mut malformed) = (Vec::new(), Vec::new());
    while let Some(part) = stream.next_part().await.unwrap() {
        match part {
            Ok(p) => sequence.push((
                p.payload_str().map(str::to_owned),
                p.sequence_number().unwrap(),
                p.sequence_size().unwrap(),
            )),
            Err(m) => malformed.push(m.line),
        }
    }
    assert_eq!(
        sequence,
        [
            (Some(r#"{"n":1}"#.into()), Some(1), None),
            (Some(r#"{"n":2}"#.into()), Some(2), None),
            (Some(r#"{"n":3}"#.into()), Some(3), Some(3)),
        ]
    );
    assert_eq!(malformed, [2, 6]);
}

#[tokio::test]
async fn the_service_passes_parts_in_order_and_hands_back_the_malformed() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let inner = service_fn(move |part: Message| {
        let record = record.clone();
        async move {
            let number = part
                .sequence_number()
                .unwrap_or_default()
                .unwrap_or_default();
            record.lock().unwrap().push(number);
            Ok::<_, std::convert::Infallible>(number)
        }
    });
    let mut split = SplitService::new(inner, Split::lines().clone());
    let original = Message::new(Bytes::from_static(b"a\nb\n\xff\nc\n"));
    let outcome = split
        .ready()
        .await
        .unwrap()
        .call(original.clone())
        .await
        .unwrap();
    assert_eq!(outcome.accepted, [1, 2, 3]);
    assert_eq!(*seen.lock().unwrap(), [1, 2, 3]);
    assert_eq!(outcome.original, original.id());
    assert_eq!(outcome.malformed.len(), 1);
    assert_eq!(outcome.malformed[0].line, 3);
}

#[tokio::test]
async fn the_service_completes_only_when_every_part_was_accepted() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let waiting = gate.clone();
    let inner = service_fn(move |_part: Message| {
        let waiting = waiting.clone();
        async move {
            // Each part is accepted when the test lets it through.
            waiting.acquire().await.map(|p| p.forget())
        }
    });
    let mut split = SplitService::new(inner, Split::lines());
    split.ready().await.unwrap();
    let mut call = std::pin::pin!(split.call(Message::new("1\n2\n3\n")));
    for _ in 0..2 {
        assert!(matches!(futures::poll!(call.as_mut()), Poll::Pending));
        gate.add_permits(1);
        tokio::task::yield_now().await;
    }
    assert!(
        matches!(futures::poll!(call.as_mut()), Poll::Pending),
        "part 3 not accepted yet"
    );
    gate.add_permits(1);
    let outcome = call.await.unwrap();
    assert_eq!(outcome.accepted.len(), 3);
}

#[tokio::test]
async fn the_service_stops_at_the_first_part_not_accepted() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let inner = service_fn(move |part: Message| {
        let record = record.clone();
        async move {
            let text = part.payload_str().unwrap_or_default().to_owned();
            record.lock().unwrap().push(text.clone());
            if text == "fail" {
                Err("channel closed")
            } else {
                Ok(())
            }
        }
    });
    let mut split = SplitLayerCheck::wrap(inner);
    let err = split
        .ready()
        .await
        .unwrap()
        .call(Message::new("ok\nfail\nnever\n"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            SplitError::Part {
                sequence_number: 2,
                source: "channel closed"
            }
        ),
        "{err}"
    );
    assert_eq!(*seen.lock().unwrap(), ["ok", "fail"]);
}

/// The layer makes the same service as `SplitService::new`.
struct SplitLayerCheck;

impl SplitLayerCheck {
    fn wrap<S>(inner: S) -> SplitService<S> {
        tower::Layer::layer(
            &SplitService::<()>::layer(Split::new(Format::lines())),
            inner,
        )
    }
}

proptest! {
    #[test]
    fn lines_split_then_joined_give_back_the_input(
        lines in proptest::collection::vec("[^\r\n]{0,12}", 0..20),
        last_terminated in any::<bool>(),
    ) {
        // A line ends with a newline; the last may lack one, unless it is empty (an empty,
        // unterminated last line is no line at all).
        let mut input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let unterminated = !last_terminated && lines.last().is_some_and(|l| !l.is_empty());
        if unterminated {
            input.pop();
        }
        let parts = Split::lines().parts(&Message::new(input.clone()));
        let texts: Vec<String> = parts
            .into_iter()
            .map(|p| p.map(|m| m.payload_str().unwrap_or_default().to_owned()))
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(&texts, &lines);
        let mut joined: String = texts.iter().map(|l| format!("{l}\n")).collect();
        if unterminated {
            joined.pop();
        }
        prop_assert_eq!(joined, input);
    }
}
