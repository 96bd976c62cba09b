//! The limits of steps that call out (`timeout`, `retry`, `concurrency`, `circuit-breaker`), for
//! `enrich` against a real HTTP server started here, and for `process`.

mod support {
    pub mod customers;
    pub mod enrich_route;
}

use std::sync::atomic::Ordering;
use std::time::Duration;

use eip_core::Message;
use eip_dsl::step::Services;
use serde_json::json;
use support::customers::server;
use support::enrich_route::{death, drain, first_dead_letter, flow, flow_with, order, payload};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_lookup_is_retried_and_the_second_attempt_is_merged() {
    let (base, seen) = server().await;
    let flow = flow(&format!(
        "      - enrich:
          http: {{url: '{base}/flaky/{{header.customer}}'}}
          merge: '. + $answer'
          retry: {{max-attempts: 3, backoff: 10ms}}"
    ));
    flow.routes()[0].handle(order("x")).await.unwrap();
    assert_eq!(seen.calls("/flaky/x"), 2);
    let out = drain(&flow, "out").await;
    assert_eq!(payload(&out[0])["ok"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_past_its_timeout_is_redelivered_then_dead_lettered_with_the_error() {
    let (base, seen) = server().await;
    let flow = flow_with(
        &format!(
            "      - enrich:
          http: {{url: '{base}/slow/{{header.customer}}'}}
          merge: '. + $answer'
          timeout: 100ms
          retry: {{max-attempts: 2, backoff: 1ms}}"
        ),
        ", redelivery: {max-attempts: 2, initial-backoff: 10ms}",
        &Services::new(),
    );
    let dead = first_dead_letter(&flow, order("x")).await;
    let (reason, error) = death(&dead);
    assert_eq!(reason, "max-redeliveries");
    assert!(
        error.contains("step 1 (enrich GET")
            && error.contains("no answer within 100ms (after 2 attempts)"),
        "{error}"
    );
    assert_eq!(seen.calls("/slow/x"), 4, "2 deliveries of 2 attempts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_circuit_breaker_fails_fast_without_calling_and_the_message_is_redelivered() {
    let (base, seen) = server().await;
    let flow = flow(&format!(
        "      - enrich:
          http: {{url: '{base}/down/{{header.customer}}'}}
          merge: '. + $answer'
          circuit-breaker: {{failures: 2, reset: 1h}}"
    ));
    let route = &flow.routes()[0];
    for _ in 0..2 {
        let failed = route.handle(order("x")).await.unwrap_err().to_string();
        assert!(
            failed.contains("answered 500: down for maintenance"),
            "{failed}"
        );
    }
    let failed = route.handle(order("x")).await.unwrap_err().to_string();
    assert!(
        failed.contains("circuit breaker open after 2 failed calls in a row"),
        "{failed}"
    );
    assert!(failed.contains("the last failure: GET"), "{failed}");
    assert_eq!(seen.calls("/down/x"), 2, "the third call was not made");
    assert!(drain(&flow, "out").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_lookups_run_at_once_than_the_concurrency_limit() {
    let (base, seen) = server().await;
    let flow = flow(&format!(
        "      - enrich:
          http: {{url: '{base}/gate/{{header.customer}}'}}
          merge: '. + {{gate: $answer.id}}'
          concurrency: 2"
    ));
    let route = flow.routes()[0].clone();
    let calls = (0..6).map(|n| {
        let route = route.clone();
        tokio::spawn(async move { route.handle(order(&format!("g{n}"))).await })
    });
    for call in futures::future::join_all(calls).await {
        call.unwrap().unwrap();
    }
    assert_eq!(
        seen.most.load(Ordering::SeqCst),
        2,
        "two at once, never more"
    );
    assert_eq!(drain(&flow, "out").await.len(), 6);
}

/// A service that answers after `delay`.
fn slow_service(
    delay: Duration,
) -> impl tower::Service<
    Message,
    Response = Message,
    Error = tower::BoxError,
    Future = impl Future<Output = Result<Message, tower::BoxError>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(move |msg: Message| async move {
        tokio::time::sleep(delay).await;
        Ok::<Message, tower::BoxError>(msg)
    })
}

#[tokio::test]
async fn a_process_step_takes_the_same_limits() {
    let services = Services::new().add("slow", slow_service(Duration::from_secs(5)));
    let flow = flow_with(
        "      - process: {service: slow, timeout: 50ms, circuit-breaker: {failures: 1, reset: 1h}}",
        "",
        &services,
    );
    let route = &flow.routes()[0];
    let failed = route
        .handle(Message::new("{}"))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        failed,
        "route `route-1`, step 1 (process slow (timeout 50ms, circuit breaker after 1 failures for 3600s)): no answer within 50ms"
    );
    let failed = route
        .handle(Message::new("{}"))
        .await
        .unwrap_err()
        .to_string();
    assert!(failed.contains("circuit breaker open"), "{failed}");
}
