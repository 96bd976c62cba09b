//! Liveness and readiness, as an orchestrator probes them.
//!
//! `/health/live` answers 200 while the process serves, token or not: a process that answers
//! is alive. `/health/ready` answers 503 with what the flow still waits for (adapters and
//! bridges connecting, the flow starting, channels kept in brokers binding their
//! subscriptions, or the flow stopping), and 200 once it waits for nothing.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use super::api::Admin;
use super::model::{LiveInfo, ReadyInfo};
use crate::compile::FlowView;

pub(super) async fn live() -> Json<LiveInfo> {
    Json(LiveInfo { live: true })
}

pub(super) async fn ready(State(admin): State<Arc<Admin>>) -> (StatusCode, Json<ReadyInfo>) {
    let info = readiness(&admin.view).await;
    let status = if info.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(info))
}

/// Whether `view`'s flow is ready, and what it waits for.
pub(super) async fn readiness(view: &FlowView) -> ReadyInfo {
    let waiting_for = view.waiting_for().await;
    ReadyInfo {
        ready: waiting_for.is_empty(),
        waiting_for,
    }
}
