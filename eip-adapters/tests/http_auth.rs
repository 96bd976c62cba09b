//! The inbound adapter's bearer token, read from the environment.
//!
//! One test in its own binary: it sets an environment variable before any other thread runs,
//! which tests sharing a process could not do safely.

#![cfg(feature = "http")]

use std::net::SocketAddr;

use eip_adapters::http::{ConfigProblem, HttpInbound, HttpInboundConfig};
use eip_core::channel::PointToPoint;

const VARIABLE: &str = "EIP_HTTP_AUTH_TEST_TOKEN";
const TOKEN: &str = "correct-horse-battery-staple";

fn config(variable: &str) -> HttpInboundConfig {
    let mut config = HttpInboundConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), "/orders");
    config.bearer_token_env = Some(variable.into());
    config
}

#[test]
fn only_requests_with_the_configured_bearer_token_are_accepted() {
    // SAFETY: the only test of this binary, and no other thread has started yet.
    unsafe { std::env::set_var(VARIABLE, TOKEN) };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(check_tokens());
}

async fn check_tokens() {
    let orders = PointToPoint::new("orders", 10).unwrap();

    let missing = HttpInbound::new(config("EIP_HTTP_AUTH_TEST_UNSET"), orders.clone()).unwrap_err();
    assert_eq!(
        missing.problems,
        vec![ConfigProblem::MissingEnv("EIP_HTTP_AUTH_TEST_UNSET".into())]
    );
    assert!(missing.to_string().contains("EIP_HTTP_AUTH_TEST_UNSET"));

    let inbound = HttpInbound::new(config(VARIABLE), orders.clone()).unwrap();
    assert!(!format!("{inbound:?}").contains(TOKEN), "never shown");
    let server = inbound.bind().await.unwrap();
    let url = format!("http://{}/orders", server.local_addr());
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let post = |authorization: Option<String>| {
        let mut request = client.post(&url).body("order");
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.send()
    };

    let without = post(None).await.unwrap();
    assert_eq!(without.status(), 401);
    assert_eq!(without.headers()["www-authenticate"], "Bearer");
    let wrong = post(Some("Bearer correct-horse-battery-stapler".into()))
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(!wrong.text().await.unwrap().contains(TOKEN));
    let wrong_scheme = post(Some(format!("Basic {TOKEN}"))).await.unwrap();
    assert_eq!(wrong_scheme.status(), 401);
    assert_eq!(orders.stats().depth, 0, "nothing unauthenticated got in");

    let right = post(Some(format!("Bearer {TOKEN}"))).await.unwrap();
    assert_eq!(right.status(), 202);
    assert_eq!(orders.stats().depth, 1);
    server.shutdown().await;
}
