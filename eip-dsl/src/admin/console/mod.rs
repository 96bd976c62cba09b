//! The web console: a page the admin server serves at `/` that shows the running flow and
//! changes it through the API, in the browser, with nothing to install.
//!
//! The page (`index.html`), its script (`console.js`, plain JavaScript) and its style
//! (`console.css`) are written here and built into the binary; nothing is fetched from
//! elsewhere. The page and its two files are served without the token: they hold no data.
//! Everything the page shows it asks the API for, with the token when the server has one
//! (the page asks for it on the first `401` and keeps it in the tab's `sessionStorage`):
//!
//! - `GET /api/graph.svg`: the flow drawn as `eip graph --format svg` draws it (the flow
//!   file's channels, routes, exchanges and adapters, with the joins and bindings in place now,
//!   those added at runtime too), each node a `<g class="node">`
//!   with its name in `data-name`, on which the page writes the counters of `/api/flow`,
//!   read every second;
//! - the channels with their counters and rates, the routes with pause and resume, the joins
//!   and bindings with forms to add and remove those made at runtime, a test message form,
//!   and the dead letters with replay and delete.
//!
//! **Safety.** The page puts what it reads into the document as text only (never as markup):
//! a message's payload is the sender's data. The graph is parsed as an SVG document and
//! imported, and the `Content-Security-Policy` of [`CONTENT_SECURITY_POLICY`] allows scripts
//! and styles from the server only (no inline script), connections to the server only, and no
//! framing, so even markup that got in could run nothing.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use eip_core::channel::Channel;
use eip_core::predicate::Predicate;

use super::api::{Admin, unknown};
use crate::compile::FlowView;
use crate::plan::{BindingPlan, JoinPlan, Plan};

/// The `Content-Security-Policy` of the console's page and files: scripts, styles and
/// connections to this server only, images from it or `data:`, no plugins, frames or forms
/// posted elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The page.
const PAGE: &str = include_str!("index.html");

/// The files the page loads, under `/console/`: name, content type, content.
const FILES: &[(&str, &str, &str)] = &[
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("console.js"),
    ),
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("console.css"),
    ),
];

/// The console's routes: `GET /` (the page) and `GET /console/{file}`, open to all.
pub(super) fn pages<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(page))
        .route("/console/{file}", get(file))
}

/// `body` as `content_type`, with the headers every console answer carries.
fn served(content_type: &'static str, body: &'static str) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-cache"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn page() -> Response {
    served("text/html; charset=utf-8", PAGE)
}

async fn file(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, body)) => served(content_type, body),
        None => unknown("console file", &name, FILES.iter().map(|(n, _, _)| *n)).into_response(),
    }
}

/// `GET /api/graph.svg`: the flow's drawing, as `eip graph --format svg` makes it, with its
/// joins and bindings as they are now (those added at runtime too).
pub(super) async fn graph(State(admin): State<Arc<Admin>>) -> Response {
    // The plan the flow runs now (a reload swaps it), with the joins and bindings in place.
    let drawing = crate::graph::svg(&as_now(&admin.view.plan(), &admin.view));
    let mut response = (
        [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        drawing,
    )
        .into_response();
    // Opened on its own, the drawing runs nothing and loads nothing.
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// `plan` with the joins and the exchanges' bindings `view`'s bus has now in place of the
/// flow file's.
fn as_now(plan: &Plan, view: &FlowView) -> Plan {
    let mut plan = plan.clone();
    plan.joins.clear();
    for (channel, _) in view.channels().iter() {
        let Channel::PublishSubscribe(source) = channel else {
            continue;
        };
        for join in source.joins().iter() {
            plan.joins.push(JoinPlan {
                from: join.source().to_owned(),
                to: join.destination().name().to_owned(),
                // A join's filter is described by its predicate's text, which parses back.
                filter: (join.filter()).and_then(|f| Predicate::parse(f.description()).ok()),
                hops: join.hops(),
                archival: join.is_archival(),
            });
        }
    }
    for exchange in &mut plan.exchanges {
        let Ok(live) = view.bus().exchange(&exchange.name) else {
            continue;
        };
        exchange.bindings = (live.bindings().into_iter())
            .map(|(_, binding)| BindingPlan {
                key: binding.key().cloned(),
                to: (binding.targets().iter())
                    .map(|c| c.name().to_owned())
                    .collect(),
            })
            .collect();
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_the_files_served_and_no_inline_script() {
        for (name, _, _) in FILES {
            assert!(PAGE.contains(&format!("\"/console/{name}\"")), "{name}");
        }
        assert!(!PAGE.contains("<script>"), "no inline script");
        assert!(!PAGE.contains("style="), "no inline style");
    }

    #[test]
    fn the_script_never_writes_markup() {
        let (_, _, script) = FILES[0];
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!script.contains(sink), "console.js uses {sink}");
        }
    }
}
