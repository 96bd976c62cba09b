//! A customer service over HTTP, started on a port of its own for the enricher's tests, which
//! counts what it was asked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// What the test server saw.
#[derive(Default)]
pub struct Seen {
    /// Requests by path.
    calls: Mutex<HashMap<String, u32>>,
    /// Requests being answered now, and the most at once.
    in_flight: AtomicU32,
    pub most: AtomicU32,
}

impl Seen {
    /// How many requests `path` had.
    pub fn calls(&self, path: &str) -> u32 {
        self.calls.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    fn count(&self, path: String) -> u32 {
        let mut calls = self.calls.lock().unwrap();
        let n = calls.entry(path).or_default();
        *n += 1;
        *n
    }
}

/// A customer service on a port of its own:
/// - `GET /customers/{id}`: `c1` and `c2` are known, `bad` is answered 400, `text` with a
///   body that is not JSON, any other 404;
/// - `GET /flaky/{id}`: 500 the first time, then the answer;
/// - `GET /down/{id}`: 500 always; `GET /slow/{id}`: after 5 s;
/// - `GET /gate/{id}`: answers once two requests are in flight (or after 5 s);
/// - `POST /echo`: the body it was sent, as `{"sent": BODY}`.
pub async fn server() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let app = axum::Router::new()
        .route("/customers/{id}", get(customer))
        .route("/flaky/{id}", get(flaky))
        .route("/down/{id}", get(down))
        .route("/slow/{id}", get(slow))
        .route("/gate/{id}", get(gate))
        .route("/echo", post(echo))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{address}"), seen)
}

fn json_answer(value: Value) -> Response {
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        value.to_string(),
    )
        .into_response()
}

async fn customer(State(seen): State<Arc<Seen>>, UrlPath(id): UrlPath<String>) -> Response {
    seen.count(format!("/customers/{id}"));
    match id.as_str() {
        "c1" => json_answer(json!({"name": "Ada", "tier": "gold"})),
        "c2" => json_answer(json!({"name": "Grace", "tier": "silver"})),
        "bad" => (StatusCode::BAD_REQUEST, "not a customer id").into_response(),
        "text" => (StatusCode::OK, "<html>hello</html>").into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn flaky(State(seen): State<Arc<Seen>>, UrlPath(id): UrlPath<String>) -> Response {
    match seen.count(format!("/flaky/{id}")) {
        1 => (StatusCode::INTERNAL_SERVER_ERROR, "busy").into_response(),
        _ => json_answer(json!({"ok": true})),
    }
}

async fn down(State(seen): State<Arc<Seen>>, UrlPath(id): UrlPath<String>) -> Response {
    seen.count(format!("/down/{id}"));
    (StatusCode::INTERNAL_SERVER_ERROR, "down for maintenance").into_response()
}

async fn slow(State(seen): State<Arc<Seen>>, UrlPath(id): UrlPath<String>) -> Response {
    seen.count(format!("/slow/{id}"));
    tokio::time::sleep(Duration::from_secs(5)).await;
    json_answer(json!({}))
}

async fn gate(State(seen): State<Arc<Seen>>, UrlPath(id): UrlPath<String>) -> Response {
    seen.count(format!("/gate/{id}"));
    let now = seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    seen.most.fetch_max(now, Ordering::SeqCst);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while seen.in_flight.load(Ordering::SeqCst) < 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Both answered requests leave only once the other one was seen.
    tokio::time::sleep(Duration::from_millis(20)).await;
    seen.in_flight.fetch_sub(1, Ordering::SeqCst);
    json_answer(json!({"id": id}))
}

async fn echo(body: String) -> Response {
    let sent: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    json_answer(json!({ "sent": sent }))
}
