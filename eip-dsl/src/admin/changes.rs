//! The write side for joins and bindings: `POST /api/joins`, `DELETE /api/joins/{id}`,
//! `POST /api/bindings`, `DELETE /api/bindings/{id}`, and `GET /api/changes` listing what was
//! added at runtime. Each is a [`RuntimeChanges`](crate::control::RuntimeChanges) call:
//! checked as the flow file's join or binding would be, kept in the durable store when the flow
//! has one, applied at once.
//!
//! A change needs the server's token: a server started without one (loopback only) serves
//! the read side and answers every change 403, saying how to set a token. Every change made
//! is written to standard error (`[eip] admin: join 3 added: quotes -> quotes.nyse`),
//! whatever the log level.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;

use super::api::Admin;
use super::model::ErrorBody;
use super::security::DEFAULT_TOKEN_ENV;
use crate::control::{BindingChange, ControlError, JoinChange};

/// A join added at runtime, as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeJoinInfo {
    /// Its id, by which it is removed.
    pub id: u64,
    /// The source channel.
    pub from: String,
    /// The destination.
    pub to: String,
    /// The filter's predicate, if any.
    pub filter: Option<String>,
    /// The hop count asked for (`null`: the default, 10).
    pub hops: Option<i64>,
    /// Whether it is archival.
    pub archival: bool,
}

/// A binding added at runtime, as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeBindingInfo {
    /// Its id, by which it is removed.
    pub id: u64,
    /// The exchange.
    pub exchange: String,
    /// The topic pattern (`null`: every subject).
    pub key: Option<String>,
    /// The target channels.
    pub to: Vec<String>,
}

/// `GET /api/changes`: the joins and bindings added at runtime and still in place.
#[derive(Debug, Clone, Serialize)]
pub struct ChangesInfo {
    /// Whether they are kept across a restart (the flow has a durable store).
    pub kept: bool,
    /// The joins, by id.
    pub joins: Vec<RuntimeJoinInfo>,
    /// The bindings, by id.
    pub bindings: Vec<RuntimeBindingInfo>,
}

fn join_info(id: u64, join: JoinChange) -> RuntimeJoinInfo {
    RuntimeJoinInfo {
        id,
        from: join.from,
        to: join.to,
        filter: join.filter,
        hops: join.hops,
        archival: join.archival,
    }
}

fn binding_info(id: u64, binding: BindingChange) -> RuntimeBindingInfo {
    RuntimeBindingInfo {
        id,
        exchange: binding.exchange,
        key: binding.key,
        to: binding.to,
    }
}

pub(super) type Refusal = (StatusCode, Json<ErrorBody>);

pub(super) fn refusal(status: StatusCode, error: impl Into<String>) -> Refusal {
    (status, Json(ErrorBody::new(error)))
}

/// 403 unless the server has a token (every request that reaches here has shown it).
pub(super) fn allowed(admin: &Admin) -> Result<(), Refusal> {
    if admin.token.is_some() {
        return Ok(());
    }
    Err(refusal(
        StatusCode::FORBIDDEN,
        format!(
            "changes need a token: start eip with the environment variable `{DEFAULT_TOKEN_ENV}` \
             (or the flow's `admin.token`) set, and send `Authorization: Bearer TOKEN`"
        ),
    ))
}

/// A body that is not the change's JSON: 400 saying what serde found.
pub(super) fn body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, Refusal> {
    body.map(|Json(change)| change)
        .map_err(|e| refusal(StatusCode::BAD_REQUEST, e.body_text()))
}

/// The id in the path: a whole number, else 400.
fn change_id(id: Result<Path<u64>, PathRejection>) -> Result<u64, Refusal> {
    id.map(|Path(id)| id).map_err(|e| {
        refusal(
            StatusCode::BAD_REQUEST,
            format!("a change's id is a whole number: {}", e.body_text()),
        )
    })
}

pub(super) fn failed(error: ControlError) -> Refusal {
    let status = match &error {
        ControlError::Refused(_) => StatusCode::BAD_REQUEST,
        ControlError::Unknown {
            what,
            name,
            closest,
        } => {
            let body = ErrorBody {
                error: format!("unknown {what} `{name}`"),
                closest: closest.clone(),
            };
            return (StatusCode::NOT_FOUND, Json(body));
        }
        ControlError::UnknownId { .. } => StatusCode::NOT_FOUND,
        ControlError::Apply(_) | ControlError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    refusal(status, error.to_string())
}

/// Writes a change made to standard error, escaped.
pub(super) fn audit(what: std::fmt::Arguments<'_>) {
    eprintln!("[eip] admin: {}", eip_core::log::Escaped(&what.to_string()));
}

pub(super) async fn list(State(admin): State<Arc<Admin>>) -> Json<ChangesInfo> {
    let changes = &admin.changes;
    Json(ChangesInfo {
        kept: changes.is_kept(),
        joins: (changes.joins().into_iter())
            .map(|(id, j)| join_info(id, j))
            .collect(),
        bindings: (changes.bindings().into_iter())
            .map(|(id, b)| binding_info(id, b))
            .collect(),
    })
}

pub(super) async fn add_join(
    State(admin): State<Arc<Admin>>,
    join: Result<Json<JoinChange>, JsonRejection>,
) -> Result<(StatusCode, Json<RuntimeJoinInfo>), Refusal> {
    allowed(&admin)?;
    let join = body(join)?;
    let id = admin.changes.add_join(join.clone()).await.map_err(failed)?;
    audit(format_args!("join {id} added: {}", join.describe()));
    Ok((StatusCode::CREATED, Json(join_info(id, join))))
}

pub(super) async fn remove_join(
    State(admin): State<Arc<Admin>>,
    id: Result<Path<u64>, PathRejection>,
) -> Result<Json<RuntimeJoinInfo>, Refusal> {
    allowed(&admin)?;
    let id = change_id(id)?;
    let join = admin.changes.remove_join(id).await.map_err(failed)?;
    audit(format_args!("join {id} removed: {}", join.describe()));
    Ok(Json(join_info(id, join)))
}

pub(super) async fn add_binding(
    State(admin): State<Arc<Admin>>,
    binding: Result<Json<BindingChange>, JsonRejection>,
) -> Result<(StatusCode, Json<RuntimeBindingInfo>), Refusal> {
    allowed(&admin)?;
    let binding = body(binding)?;
    let id = (admin.changes.add_binding(binding.clone()).await).map_err(failed)?;
    audit(format_args!("binding {id} added: {}", binding.describe()));
    Ok((StatusCode::CREATED, Json(binding_info(id, binding))))
}

pub(super) async fn remove_binding(
    State(admin): State<Arc<Admin>>,
    id: Result<Path<u64>, PathRejection>,
) -> Result<Json<RuntimeBindingInfo>, Refusal> {
    allowed(&admin)?;
    let id = change_id(id)?;
    let binding = admin.changes.remove_binding(id).await.map_err(failed)?;
    audit(format_args!("binding {id} removed: {}", binding.describe()));
    Ok(Json(binding_info(id, binding)))
}
