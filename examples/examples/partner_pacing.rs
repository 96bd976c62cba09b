//! Pacing calls to a partner's API from Rust alone, without a flow file: a Throttler (two calls a
//! second per tenant, bursts of two) and a Delayer (each call 50 ms after it is let through) as
//! tower layers on one `ServiceBuilder`, in front of a stand-in for the partner that prints what
//! it got and when. A request without a tenant comes back refused, never reaching the partner.
//!
//! Run with `cargo run -p examples --example partner_pacing`.

use std::sync::Arc;
use std::time::Duration;

use eip_core::Message;
use eip_steps::aggregate::Key;
use eip_steps::delay::{DelayLayer, Wait};
use eip_steps::throttle::{Rate, ThrottleConfig, ThrottleLayer};
use tokio::time::Instant;
use tower::{ServiceBuilder, ServiceExt, service_fn};

// One thread: the four calls spawned below then start in the order they were spawned, and the
// throttle gives turns in the order calls start. On several worker threads the spawned tasks may
// start in any order, and which of acme's three orders waits for the next token would vary.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let started = Arc::new(Instant::now());
    let clock = started.clone();
    let partner = service_fn(move |msg: Message| {
        let at = clock.elapsed().as_millis();
        let tenant = msg
            .headers()
            .get("tenant")
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_owned();
        let request = msg.payload_str().unwrap_or("").to_owned();
        async move {
            println!("partner got {tenant} {request} at {at} ms");
            Ok::<_, std::convert::Infallible>(())
        }
    });
    let rate = Rate::new(2, Duration::from_secs(1)).expect("two a second is a rate");
    let per_tenant = ThrottleConfig::new(rate)
        .burst(2)
        .key(Key::header("tenant"));
    let paced = ServiceBuilder::new()
        .layer(ThrottleLayer::new(per_tenant))
        .layer(DelayLayer::new(Wait::fixed(Duration::from_millis(50))))
        .service(partner);

    let requests = [
        ("acme", "order 1"),
        ("acme", "order 2"),
        ("acme", "order 3"),
        ("globex", "order 4"),
    ];
    let mut calls = Vec::new();
    for (tenant, request) in requests {
        let msg = Message::builder(request).header("tenant", tenant).build();
        calls.push(tokio::spawn(paced.clone().oneshot(msg)));
    }
    for call in calls {
        if let Ok(Err(e)) = call.await {
            println!("refused: {e}");
        }
    }
    match paced.oneshot(Message::new("order 5")).await {
        Ok(()) => println!("order 5 went through"),
        Err(e) => println!("refused order 5: {e}"),
    }
    println!("done after {} ms", started.elapsed().as_millis());
}
