//! One request: checked (token, content type, size, JSON), made a message, sent, answered.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use eip_core::bus::RequestError;
use eip_core::channel::{Channel, ChannelSender};
use eip_core::{Message, Outcome};
use serde_json::json;
use tower::{Service, ServiceExt};

use super::Destination;
use crate::http::bearer::BearerToken;
use eip_core::log::Escaped;

/// What every request of one adapter shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) destination: Destination,
    pub(crate) token: Option<BearerToken>,
    pub(crate) copy_headers: Vec<HeaderName>,
    pub(crate) json: bool,
    pub(crate) accept_wait: Duration,
    /// Whole seconds, at least 1.
    pub(crate) retry_after: u64,
    /// While its switch is paused, requests are answered 503 (a Detour).
    pub(crate) pause: std::sync::OnceLock<eip_core::endpoint::PauseGate>,
}

impl std::fmt::Debug for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Destination::Channel(c) => write!(f, "Channel({})", c.name()),
            Destination::Request {
                channel, timeout, ..
            } => write!(f, "Request({}, {timeout:?})", channel.name()),
        }
    }
}

pub(crate) fn router(path: &str, body_limit: usize, shared: Arc<Shared>) -> axum::Router {
    axum::Router::new()
        .route(path, post(accept))
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(shared)
}

async fn accept(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    // The token first, before reading a byte of the body.
    if let Some(token) = &shared.token {
        let presented = request.headers().get(header::AUTHORIZATION);
        if !token.admits(presented.map(HeaderValue::as_bytes)) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a valid bearer token is required\n",
            )
                .into_response();
        }
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if shared.json && !content_type.as_deref().is_some_and(is_json) {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "this route takes application/json\n",
        )
            .into_response();
    }
    let copied = match copied_headers(&shared, request.headers()) {
        Ok(copied) => copied,
        Err(name) => {
            let text = format!("header `{name}` is not text\n");
            return (StatusCode::BAD_REQUEST, text).into_response();
        }
    };
    let body = match Bytes::from_request(request, &shared).await {
        Ok(body) => body,
        // 413 over the limit, 400 for a body cut short.
        Err(rejection) => return rejection.into_response(),
    };
    let mut message = Message::builder(body);
    if let Some(content_type) = content_type {
        message = message.content_type(content_type);
    }
    for (name, value) in copied {
        message = message.header(name, value);
    }
    let message = message.build();
    // Parsed once here, the value stays with the message for the routers downstream.
    if shared.json
        && !is_datatype_channel(&shared.destination)
        && let Err(e) = message.json_value()
    {
        let text = format!("malformed JSON: {}\n", e.source);
        return (StatusCode::BAD_REQUEST, text).into_response();
    }
    match &shared.destination {
        Destination::Channel(channel) => send(&shared, channel, message).await,
        Destination::Request {
            bus,
            channel,
            timeout,
        } => request_reply(&shared, bus, channel, message, *timeout).await,
    }
}

/// The configured request headers present, as message headers; or the one that is not text.
fn copied_headers<'a>(
    shared: &'a Shared,
    headers: &HeaderMap,
) -> Result<Vec<(String, String)>, &'a HeaderName> {
    let mut copied = Vec::with_capacity(shared.copy_headers.len());
    for name in &shared.copy_headers {
        if let Some(value) = headers.get(name) {
            let Ok(text) = value.to_str() else {
                return Err(name);
            };
            copied.push((name.as_str().to_owned(), text.to_owned()));
        }
    }
    Ok(copied)
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.to_ascii_lowercase().ends_with("+json")
}

fn is_datatype_channel(destination: &Destination) -> bool {
    let channel = match destination {
        Destination::Channel(c) | Destination::Request { channel: c, .. } => c,
    };
    match channel {
        Channel::PointToPoint(c) => c.datatype().is_some(),
        Channel::PublishSubscribe(c) => c.datatype().is_some(),
    }
}

/// Waits up to `accept_wait` for room in the channel: the sender that has it, or the 429.
async fn room(shared: &Shared, channel: &Channel) -> Result<ChannelSender, Response> {
    if shared.pause.get().is_some_and(|gate| gate.is_paused()) {
        let why = "the adapter is paused";
        return Err(busy(shared, StatusCode::SERVICE_UNAVAILABLE, why));
    }
    let mut sender = channel.sender();
    match tokio::time::timeout(shared.accept_wait, sender.ready()).await {
        Ok(_) => Ok(sender),
        Err(_) => Err(busy(
            shared,
            StatusCode::TOO_MANY_REQUESTS,
            "channel is full",
        )),
    }
}

fn busy(shared: &Shared, status: StatusCode, why: &str) -> Response {
    let retry_after = shared.retry_after.to_string();
    (
        status,
        [(header::RETRY_AFTER, retry_after)],
        format!("{why}: retry later\n"),
    )
        .into_response()
}

async fn send(shared: &Shared, channel: &Channel, message: Message) -> Response {
    let mut sender = match room(shared, channel).await {
        Ok(sender) => sender,
        Err(response) => return response,
    };
    let id = message.id().to_string();
    // Readiness is a hint: a send that lost the last slot waits in here, bounded by the
    // server's whole-request timeout.
    match sender.call(message).await {
        Ok(outcome) => (StatusCode::ACCEPTED, axum_json(accepted(&id, outcome))).into_response(),
        Err(e) => {
            tracing::warn!(channel = channel.name(), message = %id, error = %Escaped(&e), "HTTP inbound: channel refused the message");
            busy(
                shared,
                StatusCode::SERVICE_UNAVAILABLE,
                "channel unavailable",
            )
        }
    }
}

fn accepted(id: &str, outcome: Outcome) -> serde_json::Value {
    match outcome {
        Outcome::Invalid { reason } => json!({ "id": id, "outcome": "invalid", "reason": reason }),
        Outcome::Duplicate => json!({ "id": id, "outcome": "duplicate" }),
        _ => json!({ "id": id, "outcome": "accepted" }),
    }
}

fn axum_json(value: serde_json::Value) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
}

async fn request_reply(
    shared: &Shared,
    bus: &eip_core::MessageBus,
    channel: &Channel,
    message: Message,
    timeout: Duration,
) -> Response {
    if let Err(response) = room(shared, channel).await {
        return response;
    }
    let id = message.id().to_string();
    match bus.request(channel.name(), message, timeout).await {
        Ok(reply) => {
            let content_type = reply
                .content_type()
                .ok()
                .flatten()
                .unwrap_or("application/octet-stream")
                .to_owned();
            let (_, _, payload) = reply.into_parts();
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, content_type)],
                payload,
            )
                .into_response()
        }
        Err(RequestError::Timeout { .. }) => (
            StatusCode::GATEWAY_TIMEOUT,
            axum_json(json!({ "id": id, "outcome": "no-reply" })),
        )
            .into_response(),
        Err(e) => {
            tracing::warn!(channel = channel.name(), message = %id, error = %Escaped(&e), "HTTP inbound: request failed");
            busy(
                shared,
                StatusCode::SERVICE_UNAVAILABLE,
                "channel unavailable",
            )
        }
    }
}
