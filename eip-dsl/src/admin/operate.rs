//! Acting on a channel or a route: `POST /api/channels/{name}/purge` (the Channel Purger),
//! `POST /api/channels/{name}/messages` (a Test Message), and `POST /api/routes/{name}/pause`
//! and `/resume` (a detour: a paused route takes nothing new from its channel, whose messages
//! wait in order; what it was processing finishes; resumed, it goes on from the next waiting
//! message. A pause lasts until resumed or until the process ends).
//!
//! A purge removes the messages waiting on the channel (all, or those a predicate selects);
//! deliveries in progress are untouched, and what is removed is gone, not dead-lettered. A test
//! message is sent as `eip run --input` sends a line (`payload`, `headers`, `subject`), marked
//! with the header `test-message: true` so a consumer can tell it from real traffic, and is
//! answered with its id and what the channel did with it (accepted, or invalid and why).
//!
//! Each changes the flow: it needs the server's token, and is written to standard error.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use eip_core::Message;
use eip_core::channel::{ChannelPurger, Outcome, Selector};
use eip_core::predicate::Predicate;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::api::{Admin, unknown};
use super::changes::{Refusal, allowed, audit, body, failed, refusal};
use super::model::{AdapterInfo, RouteInfo};
use crate::compile::InputMessage;
use crate::control::Detour;

/// The header a test message carries.
pub const TEST_MESSAGE: &str = "test-message";

/// `POST /api/channels/{name}/purge`'s body: which messages; none, all of them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeRequest {
    /// A predicate (`$.total > 100`, `header.kind == "test"`); only what it selects goes.
    #[serde(default)]
    pub when: Option<String>,
}

/// What a purge removed.
#[derive(Debug, Clone, Serialize)]
pub struct Purged {
    /// The channel.
    pub channel: String,
    /// How many waiting messages were removed.
    pub purged: u64,
}

/// What the channel did with a test message.
#[derive(Debug, Clone, Serialize)]
pub struct TestSent {
    /// The message's id.
    pub id: String,
    /// `accepted`, `invalid` (it did not fit the channel's datatype) or `duplicate` (the
    /// channel had stored this id already); `other` for an outcome this version does not name.
    pub outcome: String,
    /// Why it was invalid; `null` otherwise.
    pub reason: Option<String>,
}

fn channel(admin: &Admin, name: &str) -> Result<eip_core::channel::Channel, Refusal> {
    let channels = admin.view.channels();
    match channels.iter().find(|(c, _)| c.name() == name) {
        Some((channel, _)) => Ok(channel.clone()),
        None => Err(unknown(
            "channel",
            name,
            channels.iter().map(|(c, _)| c.name()),
        )),
    }
}

pub(super) async fn purge(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
    request: Option<Json<PurgeRequest>>,
) -> Result<Json<Purged>, Refusal> {
    allowed(&admin)?;
    let channel = channel(&admin, &name)?;
    let request = request.map(|Json(r)| r).unwrap_or_default();
    let purged = match &request.when {
        None => channel.purge(),
        Some(text) => {
            let predicate = Predicate::parse(text)
                .map_err(|e| refusal(StatusCode::BAD_REQUEST, format!("`when`: {e}")))?;
            let selector = Selector::new(text.clone(), move |m: &Message| predicate.matches(m));
            channel.purge_matching(&selector)
        }
    };
    let which = request
        .when
        .as_deref()
        .map_or(String::new(), |w| format!(" matching {w}"));
    audit(format_args!(
        "{name} purged: {purged} waiting messages{which}"
    ));
    Ok(Json(Purged {
        channel: name,
        purged: purged as u64,
    }))
}

pub(super) async fn send(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
    message: Result<Json<Value>, JsonRejection>,
) -> Result<(StatusCode, Json<TestSent>), Refusal> {
    allowed(&admin)?;
    let channel = channel(&admin, &name)?;
    let Value::Object(mut fields) = body(message)? else {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "a test message is a JSON object: {\"payload\": ..., \"headers\": {...}, \"subject\": ...}",
        ));
    };
    if fields.contains_key("to") {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            "a test message goes to the channel in the path: leave out `to`",
        ));
    }
    fields.insert("to".to_owned(), Value::String(name.clone()));
    let input = InputMessage::parse(&Value::Object(fields).to_string())
        .map_err(|e| refusal(StatusCode::BAD_REQUEST, e.to_string()))?;
    let mut message = input.message;
    message.headers_mut().insert(TEST_MESSAGE, true);
    let id = message.id().to_string();
    let outcome = channel.send(message).await.map_err(|e| {
        refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("`{name}` did not take it: {e}"),
        )
    })?;
    let (outcome, reason) = match outcome {
        Outcome::Accepted => ("accepted", None),
        Outcome::Invalid { reason } => ("invalid", Some(reason)),
        Outcome::Duplicate => ("duplicate", None),
        other => ("other", Some(format!("{other:?}"))),
    };
    audit(format_args!("test message {id} sent to {name}: {outcome}"));
    Ok((
        StatusCode::ACCEPTED,
        Json(TestSent {
            id,
            outcome: outcome.to_owned(),
            reason,
        }),
    ))
}

pub(super) async fn pause(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
) -> Result<Json<RouteInfo>, Refusal> {
    switch(&admin, Detour::Route(name.clone()), true).await?;
    route_info(&admin, &name)
}

pub(super) async fn resume(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
) -> Result<Json<RouteInfo>, Refusal> {
    switch(&admin, Detour::Route(name.clone()), false).await?;
    route_info(&admin, &name)
}

pub(super) async fn pause_adapter(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
) -> Result<Json<AdapterInfo>, Refusal> {
    switch(&admin, Detour::Adapter(name.clone()), true).await?;
    adapter_info(&admin, &name)
}

pub(super) async fn resume_adapter(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
) -> Result<Json<AdapterInfo>, Refusal> {
    switch(&admin, Detour::Adapter(name.clone()), false).await?;
    adapter_info(&admin, &name)
}

/// Pauses (or resumes) what `detour` names, kept as a runtime change.
async fn switch(admin: &Admin, detour: Detour, pause: bool) -> Result<(), Refusal> {
    allowed(admin)?;
    let changed = if pause {
        admin.changes.pause(&detour).await
    } else {
        admin.changes.resume(&detour).await
    }
    .map_err(failed)?;
    let what = if pause { "paused" } else { "resumed" };
    if changed {
        audit(format_args!("{} {what}", detour.describe()));
    }
    Ok(())
}

fn route_info(admin: &Admin, name: &str) -> Result<Json<RouteInfo>, Refusal> {
    let routes = admin.view.routes();
    match routes.iter().find(|r| r.name() == name) {
        Some(route) => Ok(Json(RouteInfo::of(route, admin.shape().routes.get(name)))),
        None => Err(unknown("route", name, routes.iter().map(|r| r.name()))),
    }
}

fn adapter_info(admin: &Admin, name: &str) -> Result<Json<AdapterInfo>, Refusal> {
    let adapters = admin.view.adapters();
    match adapters.iter().find(|a| a.name == name) {
        Some(adapter) => Ok(Json(AdapterInfo::of(adapter, &admin.view))),
        None => Err(unknown(
            "adapter or bridge",
            name,
            adapters.iter().map(|a| a.name.as_str()),
        )),
    }
}
