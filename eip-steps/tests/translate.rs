//! The Message Translator: payload and headers computed by jq over the original message, the id
//! and the other headers kept, and as a step, the message handed back when it fails.
#![cfg(feature = "jq")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use eip_core::Message;
use eip_core::message::{HeaderValue, names};
use eip_steps::error::StepError;
use eip_steps::expr::{Jq, RunError};
use eip_steps::translate::{Part, Translate, TranslateError, TranslateLayer};
use tower::{Layer, Service, ServiceExt, service_fn};

fn jq(source: &str) -> Jq {
    Jq::compile(source).unwrap()
}

fn order() -> Message {
    Message::builder(r#"{"id": 7, "customer": {"name": "Ada"}, "items": [{"price": 2, "qty": 3}]}"#)
        .header("desk", "fx")
        .header("trace", "t-1")
        .content_type("text/plain")
        .build()
}

#[test]
fn translate_replaces_the_payload_and_keeps_the_id_and_other_headers() {
    let msg = order();
    let translate = Translate::builder()
        .payload(jq("{id, total: (.items | map(.price * .qty) | add)}"))
        .build();
    let out = translate.apply(msg.clone()).unwrap();
    assert_eq!(out.id(), msg.id());
    assert_eq!(out.payload_str(), Some(r#"{"id":7,"total":6}"#));
    assert_eq!(out.content_type().unwrap(), Some("application/json"));
    assert_eq!(out.headers().get("desk"), msg.headers().get("desk"));
    assert_eq!(out.headers().get("trace"), msg.headers().get("trace"));
    assert_eq!(out.headers().len(), msg.headers().len());
}

#[test]
fn header_values_are_typed_by_the_output() {
    let translate = Translate::builder()
        .set_header("s", jq(".customer.name"))
        .set_header("i", jq(".id"))
        .set_header("f", jq(".id / 2"))
        .set_header("b", jq(".id > 1"))
        .set_header("o", jq(".items[0]"))
        .set_header("a", jq("[.id, null]"))
        .set_header("trace", jq("null"))
        .set_header("nan", jq("nan"))
        .build();
    let out = translate.apply(order()).unwrap();
    let h = out.headers();
    assert_eq!(h.get("s"), Some(&HeaderValue::Str("Ada".into())));
    assert_eq!(h.get("i"), Some(&HeaderValue::Int(7)));
    assert_eq!(h.get("f"), Some(&HeaderValue::Float(3.5)));
    assert_eq!(h.get("b"), Some(&HeaderValue::Bool(true)));
    assert_eq!(
        h.get("o"),
        Some(&HeaderValue::Str(r#"{"price":2,"qty":3}"#.into()))
    );
    assert_eq!(h.get("a"), Some(&HeaderValue::Str("[7,null]".into())));
    assert!(!h.contains("trace"), "null removes the header");
    assert!(
        !h.contains("nan"),
        "a number that is not finite counts as null"
    );
    assert_eq!(
        out.payload(),
        order().payload(),
        "no payload expression: unchanged"
    );
    assert_eq!(out.content_type().unwrap(), Some("text/plain"));
}

#[test]
fn every_expression_reads_the_original_message() {
    let translate = Translate::builder()
        .payload(jq("{renamed: .id}"))
        .set_header("id-from-payload", jq(".id"))
        .set_header("desk", jq(r#"$headers.desk + "-2""#))
        .set_header("desk-seen", jq("$headers.desk"))
        .build();
    let out = translate.apply(order()).unwrap();
    assert_eq!(
        out.headers().get("id-from-payload"),
        Some(&HeaderValue::Int(7))
    );
    assert_eq!(
        out.headers().get("desk"),
        Some(&HeaderValue::Str("fx-2".into()))
    );
    assert_eq!(
        out.headers().get("desk-seen"),
        Some(&HeaderValue::Str("fx".into()))
    );
}

#[test]
fn an_update_of_the_payload_leaves_the_original_to_the_other_expressions() {
    let translate = Translate::builder()
        .payload(jq(".id = 99 | del(.items)"))
        .set_header("id", jq(".id"))
        .set_header("lines", jq(".items | length"))
        .build();
    let out = translate.apply(order()).unwrap();
    assert_eq!(
        out.payload_str(),
        Some(r#"{"id":99,"customer":{"name":"Ada"}}"#)
    );
    assert_eq!(out.headers().get("id"), Some(&HeaderValue::Int(7)));
    assert_eq!(out.headers().get("lines"), Some(&HeaderValue::Int(1)));
}

#[test]
fn header_changes_come_after_the_content_type_in_their_order() {
    let translate = Translate::builder()
        .payload(jq("."))
        .set_header(names::CONTENT_TYPE, jq(r#""application/vnd.order+json""#))
        .set_header("x", jq("1"))
        .remove_header("x")
        .remove_header("trace")
        .build();
    let out = translate.apply(order()).unwrap();
    assert_eq!(
        out.content_type().unwrap(),
        Some("application/vnd.order+json")
    );
    assert!(!out.headers().contains("x"));
    assert!(!out.headers().contains("trace"));
}

#[test]
fn removing_headers_only_does_not_need_a_json_payload() {
    let msg = Message::builder(vec![0xff, 0x00])
        .header("trace", "t")
        .build();
    let out = Translate::builder()
        .remove_header("trace")
        .build()
        .apply(msg.clone())
        .unwrap();
    assert!(!out.headers().contains("trace"));
    assert_eq!(out.payload(), msg.payload());
}

#[test]
fn a_failed_translation_names_the_part_and_changes_nothing() {
    let translate = Translate::builder()
        .payload(jq("."))
        .set_header("total", jq(".customer.name + 1"))
        .build();
    let err = translate.apply(order()).unwrap_err();
    assert_eq!(err.part, Part::Header("total".into()));
    assert!(matches!(err.error, RunError::Failed(_)), "{err}");
    assert!(
        err.to_string()
            .starts_with("translate header `total`: jq: cannot"),
        "{err}"
    );

    let err = translate.apply(Message::new("nope")).unwrap_err();
    assert_eq!(err.part, Part::Payload);
    assert!(matches!(err.error, RunError::NotJson { .. }));

    let err = Translate::builder()
        .payload(jq(".items[]"))
        .build()
        .apply(Message::new(r#"{"items": [1, 2]}"#))
        .unwrap_err();
    assert_eq!(
        err,
        TranslateError {
            part: Part::Payload,
            error: RunError::Outputs(2)
        }
    );
    assert_eq!(
        err.to_string(),
        "translate payload: expected exactly one output from jq, got 2"
    );
}

#[tokio::test]
async fn the_step_passes_the_translated_message_on() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let seen = seen.clone();
        service_fn(move |m: Message| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(m);
                Ok::<_, std::convert::Infallible>(())
            }
        })
    };
    let layer = TranslateLayer::new(Translate::builder().payload(jq(".customer")).build());
    let mut step = layer.layer(sink);
    let msg = order();
    step.ready().await.unwrap().call(msg.clone()).await.unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].id(), msg.id());
    assert_eq!(seen[0].payload_str(), Some(r#"{"name":"Ada"}"#));
}

#[tokio::test]
async fn the_step_does_not_call_inner_on_failure_and_hands_back_the_original() {
    let calls = Arc::new(AtomicUsize::new(0));
    let sink = {
        let calls = calls.clone();
        service_fn(move |_: Message| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::convert::Infallible>(()) }
        })
    };
    let mut step = Translate::builder()
        .payload(jq(r#"error("refused")"#))
        .build()
        .layer()
        .layer(sink);
    let msg = order();
    let err = step
        .ready()
        .await
        .unwrap()
        .call(msg.clone())
        .await
        .unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(err.is_permanent());
    assert_eq!(err.to_string(), "translate payload: jq error: refused");
    // The inner service can not fail: a step failure is the only error there is.
    let StepError::Failed { error, message } = err;
    assert_eq!(error.error, RunError::Raised("refused".into()));
    assert_eq!(message, msg, "the original message, unchanged");
    assert_eq!(message.content_type().unwrap(), Some("text/plain"));
}

#[tokio::test]
async fn the_inner_services_error_is_passed_through() {
    let failing = service_fn(|_: Message| async { Err::<(), _>("channel closed") });
    let mut step = TranslateLayer::new(Translate::builder().build()).layer(failing);
    let err = step.ready().await.unwrap().call(order()).await.unwrap_err();
    assert!(matches!(err, StepError::Inner("channel closed")));
    assert!(!err.is_permanent());
}
