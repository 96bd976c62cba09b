//! The inbound HTTP adapter's request handling: any request through its axum router, in
//! process, no socket.
//!
//! The input is text: a first line of settings (`json`, `token`, `limit=N` bytes (default 64),
//! `copy=name,name` headers to copy; anything else is ignored), a request line `METHOD PATH`,
//! header lines `Name: value` up to an empty line, then the body. The adapter takes `POST
//! /in` onto a fresh point-to-point channel; with `token` it wants `Authorization: Bearer
//! fuzz-token`.
//!
//! What must hold: no panic, and an answer among those the adapter documents (202, 400, 401,
//! 404, 405, 413, 415; never a 5xx, the channel being empty and open). A request is accepted
//! (202) only if it was a `POST` to the path, carried the token when one is required, had a
//! JSON content type and a body that parses when the route takes JSON, and a body within the
//! limit; a missing token is always 401. An accepted request is on the channel exactly once,
//! as it came (payload, content type, copied headers), under the id the answer names; any
//! other answer leaves the channel empty.

#![no_main]

use std::sync::Once;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, header};
use eip_adapters::http::{HttpInbound, HttpInboundConfig};
use eip_core::channel::PointToPoint;
use eip_core::message::names;
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

const PATH: &str = "/in";
const TOKEN_VAR: &str = "EIP_FUZZ_HTTP_TOKEN";
const TOKEN: &str = "fuzz-token";

/// The answers the adapter gives to a request when its channel is open and has room.
const DOCUMENTED: [u16; 7] = [202, 400, 401, 404, 405, 413, 415];

/// The adapter's settings and the request, as the input describes them.
struct Case {
    json: bool,
    token: bool,
    limit: usize,
    copy: Vec<String>,
    request: Request<Body>,
    body: Vec<u8>,
}

fuzz_target!(|data: &[u8]| {
    static TOKEN_SET: Once = Once::new();
    // SAFETY: set once, before any thread of this process reads the environment (the target
    // runs on one thread, and the runtime it uses has no worker threads).
    TOKEN_SET.call_once(|| unsafe { std::env::set_var(TOKEN_VAR, TOKEN) });
    if let Some(case) = read_case(data) {
        eip_fuzz::runtime().block_on(check(case));
    }
});

fn read_case(data: &[u8]) -> Option<Case> {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (data, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let mut lines = head.split('\n');
    let settings = lines.next().unwrap_or("");
    let (mut json, mut token, mut limit, mut copy) = (false, false, 64, Vec::new());
    for word in settings.split(' ') {
        match word.split_once('=') {
            Some(("limit", n)) => limit = n.parse().ok().filter(|n| *n > 0).unwrap_or(limit),
            Some(("copy", names)) => copy = names.split(',').map(str::to_owned).collect(),
            _ if word == "json" => json = true,
            _ if word == "token" => token = true,
            _ => {}
        }
    }
    let (method, uri) = lines.next().unwrap_or("").split_once(' ')?;
    let mut request = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).ok()?)
        .uri(uri)
        .body(Body::from(body.to_vec()))
        .ok()?;
    for line in lines {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_bytes(value.trim().as_bytes()),
        ) {
            request.headers_mut().append(name, value);
        }
    }
    Some(Case {
        json,
        token,
        limit,
        copy,
        request,
        body: body.to_vec(),
    })
}

async fn check(case: Case) {
    let channel = PointToPoint::new("in", 4).expect("a channel with a plain name");
    let mut config = HttpInboundConfig::new("127.0.0.1:0".parse().expect("an address"), PATH);
    config.json = case.json;
    config.body_limit = case.limit;
    config.copy_headers = case.copy.clone();
    config.bearer_token_env = case.token.then(|| TOKEN_VAR.to_owned());
    let Ok(adapter) = HttpInbound::new(config, channel.clone()) else {
        // Refused settings (a copied header name that is not one): nothing to serve.
        assert!(
            case.copy
                .iter()
                .any(|n| HeaderName::try_from(n.as_str()).is_err())
        );
        return;
    };
    let (method, path) = (
        case.request.method().clone(),
        case.request.uri().path().to_owned(),
    );
    let headers = case.request.headers().clone();
    let response = match adapter.into_router().oneshot(case.request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let status = response.status();
    let answer = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("the adapter's answer is a short body");
    assert!(
        DOCUMENTED.contains(&status.as_u16()),
        "answered {status}: {answer:?}"
    );
    let to_route = method == Method::POST && path == PATH;
    if case.token && to_route && !headers.contains_key(header::AUTHORIZATION) {
        assert_eq!(status, StatusCode::UNAUTHORIZED, "no token, yet {status}");
    }
    let mut receiver = channel.receiver();
    if status != StatusCode::ACCEPTED {
        assert!(
            receiver.try_recv().is_err(),
            "answered {status}, yet the message was sent"
        );
        return;
    }
    assert!(to_route, "{method} {path} accepted");
    assert!(
        case.body.len() <= case.limit,
        "a body over the limit accepted"
    );
    if case.token {
        assert!(carries_token(&headers), "accepted without the token");
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if case.json {
        assert!(
            content_type.is_some_and(is_json),
            "{content_type:?} accepted as JSON"
        );
        assert!(serde_json::from_slice::<serde_json::Value>(&case.body).is_ok());
    }
    let delivery = receiver
        .try_recv()
        .expect("the accepted message is on the channel");
    let msg = delivery.message();
    assert_eq!(
        msg.payload().as_ref(),
        case.body.as_slice(),
        "payload changed"
    );
    assert_eq!(
        msg.headers()
            .get(names::CONTENT_TYPE)
            .and_then(|v| v.as_str()),
        content_type
    );
    check_copied(&case.copy, &headers, msg);
    let answer: serde_json::Value = serde_json::from_slice(&answer).expect("a JSON answer");
    assert_eq!(
        answer["id"],
        msg.id().to_string(),
        "the answer names another id"
    );
    delivery.ack();
    assert!(
        receiver.try_recv().is_err(),
        "one request, more than one message"
    );
}

fn carries_token(headers: &HeaderMap) -> bool {
    headers.get(header::AUTHORIZATION).is_some_and(|v| {
        let v = v.as_bytes();
        v.len() >= 7
            && v[..7].eq_ignore_ascii_case(b"bearer ")
            && v[7..].trim_ascii() == TOKEN.as_bytes()
    })
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// Every configured header the request carried is on the message, under its lower-case name.
fn check_copied(copy: &[String], headers: &HeaderMap, msg: &eip_core::Message) {
    for name in copy {
        let name = name.to_ascii_lowercase();
        let sent = headers.get(name.as_str()).and_then(|v| v.to_str().ok());
        let got = msg.headers().get(&name).and_then(|v| v.as_str());
        assert_eq!(got, sent, "header `{name}` not copied as sent");
    }
}
