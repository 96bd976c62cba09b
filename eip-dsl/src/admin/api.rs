//! The endpoints: one table lists every method and path with its handler, and the router is
//! built from that table, so [`ENDPOINTS`] is what the server serves (the OpenAPI test holds
//! the document to it); beside them, the web console's page and files ([`console`]).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, middleware};

use super::model::{
    AdapterInfo, BindingInfo, ChannelInfo, ErrorBody, ExchangeInfo, FlowInfo, JoinInfo, RouteInfo,
    Shape, StoreInfo,
};
use super::{browse, changes, console, dead_letters, health, metrics, operate, rates, security};
use crate::compile::FlowView;
use crate::control::RuntimeChanges;

/// What every handler reads: the running flow, and what the server keeps of it.
pub(super) struct Admin {
    pub(super) view: FlowView,
    /// The joins and bindings added at runtime, and where they are kept.
    pub(super) changes: Arc<RuntimeChanges>,
    /// What is read from the plan, with the generation of the flow's parts it was read at
    /// (see [`Admin::shape`]).
    pub(super) shape: std::sync::Mutex<(u64, Arc<Shape>)>,
    pub(super) rates: rates::Rates,
    pub(super) token: Option<security::Token>,
}

impl Admin {
    /// What is read from the plan (the routes' steps and actions), read again once a reload
    /// changed the flow's parts.
    pub(super) fn shape(&self) -> Arc<Shape> {
        let generation = self.view.generation();
        // A poisoned lock still holds a whole pair: it is replaced in one assignment.
        let mut kept = self.shape.lock().unwrap_or_else(|p| p.into_inner());
        if kept.0 != generation {
            *kept = (generation, Arc::new(Shape::of(&self.view.plan())));
        }
        kept.1.clone()
    }
}

/// Lists every endpoint and builds the router from the same list: `open` ones answer without
/// the token, `guarded` ones need it when one is set.
macro_rules! endpoints {
    (
        open { $($o_method:ident $o_path:literal => $o_handler:path;)* }
        guarded { $($g_method:ident $g_path:literal => $g_handler:path;)* }
    changing { $($c_method:ident $c_path:literal => $c_handler:path;)* }
    ) => {
        /// Every endpoint the admin server serves: its method (lower case) and path, in
        /// axum's syntax (`/api/channels/{name}`).
        pub const ENDPOINTS: &[(&str, &str)] = &[
            $((stringify!($o_method), $o_path),)*
            $((stringify!($g_method), $g_path),)*
            $((stringify!($c_method), $c_path),)*
        ];

        /// The router of [`ENDPOINTS`]; unknown paths are answered 404 with an [`ErrorBody`].
        pub(super) fn router(admin: Arc<Admin>) -> Router {
            let open = Router::new()
                $(.route($o_path, axum::routing::$o_method($o_handler)))*;
            let guarded = Router::new()
                $(.route($g_path, axum::routing::$g_method($g_handler)))*
                $(.route($c_path, axum::routing::$c_method($c_handler)))*
                .layer(middleware::from_fn_with_state(admin.clone(), security::require_token));
            open.merge(guarded)
                .merge(console::pages())
                .fallback(no_such_endpoint).with_state(admin)
        }
    };
}

endpoints! {
    open {
        get "/health/live" => health::live;
    }
    guarded {
        get "/health/ready" => health::ready;
        get "/metrics" => metrics::serve;
        get "/api/openapi.json" => openapi;
        get "/api/flow" => flow;
        get "/api/channels" => channels;
        get "/api/channels/{name}" => channel;
        get "/api/routes" => routes;
        get "/api/routes/{name}" => route;
        get "/api/joins" => joins;
        get "/api/exchanges" => exchanges;
        get "/api/exchanges/{name}" => exchange;
        get "/api/adapters" => adapters;
        get "/api/changes" => changes::list;
        get "/api/graph.svg" => console::graph;
        get "/api/channels/{name}/messages" => browse::list;
        get "/api/dead-letters" => dead_letters::list;
    }
    changing {
        post "/api/joins" => changes::add_join;
        delete "/api/joins/{id}" => changes::remove_join;
        post "/api/bindings" => changes::add_binding;
        delete "/api/bindings/{id}" => changes::remove_binding;
        post "/api/channels/{name}/purge" => operate::purge;
        post "/api/channels/{name}/messages" => operate::send;
        post "/api/routes/{name}/pause" => operate::pause;
        post "/api/routes/{name}/resume" => operate::resume;
        post "/api/adapters/{name}/pause" => operate::pause_adapter;
        post "/api/adapters/{name}/resume" => operate::resume_adapter;
        post "/api/dead-letters/replay" => dead_letters::replay;
        post "/api/dead-letters/delete" => dead_letters::delete;
        delete "/api/dead-letters/{id}" => dead_letters::delete_one;
    }
}

/// An answer: the JSON of `T`, or an error with its status.
type Answer<T> = Result<Json<T>, (StatusCode, Json<ErrorBody>)>;

async fn no_such_endpoint(uri: axum::http::Uri) -> (StatusCode, Json<ErrorBody>) {
    let paths = ENDPOINTS.iter().map(|(_, path)| *path);
    let body = ErrorBody {
        error: format!("no such endpoint: `{}`", uri.path()),
        closest: eip_core::bus::closest(uri.path(), paths),
    };
    (StatusCode::NOT_FOUND, Json(body))
}

/// The 404 of an unknown `what` named `name`, with the closest of `known`.
pub(super) fn unknown<'a>(
    what: &str,
    name: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> (StatusCode, Json<ErrorBody>) {
    let body = ErrorBody {
        error: format!("unknown {what} `{name}`"),
        closest: eip_core::bus::closest(name, known),
    };
    (StatusCode::NOT_FOUND, Json(body))
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], super::OPENAPI).into_response()
}

async fn flow(State(admin): State<Arc<Admin>>) -> Json<FlowInfo> {
    Json(FlowInfo {
        channels: channel_infos(&admin),
        routes: route_infos(&admin),
        joins: join_infos(&admin.view),
        exchanges: exchange_infos(&admin.view),
        adapters: adapter_infos(&admin.view),
        store: admin.view.durable_stats().map(|s| StoreInfo {
            commits: s.commits,
            records: s.records,
            acks: s.acks,
        }),
        health: health::readiness(&admin.view).await,
    })
}

async fn channels(State(admin): State<Arc<Admin>>) -> Json<Vec<ChannelInfo>> {
    Json(channel_infos(&admin))
}

async fn channel(State(admin): State<Arc<Admin>>, Path(name): Path<String>) -> Answer<ChannelInfo> {
    let channels = admin.view.channels();
    let Some((channel, store)) = channels.iter().find(|(c, _)| c.name() == name) else {
        let known = channels.iter().map(|(c, _)| c.name());
        return Err(unknown("channel", &name, known));
    };
    let counters = admin.view.counters_of(channel);
    let rates = admin.rates.of(channel.name());
    Ok(Json(ChannelInfo::of(channel, store, &counters, rates)))
}

fn channel_infos(admin: &Admin) -> Vec<ChannelInfo> {
    let counters = admin.view.counters();
    admin
        .view
        .channels()
        .iter()
        .zip(&counters)
        .map(|((channel, store), counted)| {
            ChannelInfo::of(channel, store, counted, admin.rates.of(channel.name()))
        })
        .collect()
}

async fn routes(State(admin): State<Arc<Admin>>) -> Json<Vec<RouteInfo>> {
    Json(route_infos(&admin))
}

async fn route(State(admin): State<Arc<Admin>>, Path(name): Path<String>) -> Answer<RouteInfo> {
    let routes = admin.view.routes();
    match routes.iter().find(|r| r.name() == name) {
        Some(route) => Ok(Json(RouteInfo::of(route, admin.shape().routes.get(&name)))),
        None => Err(unknown("route", &name, routes.iter().map(|r| r.name()))),
    }
}

fn route_infos(admin: &Admin) -> Vec<RouteInfo> {
    let shape = admin.shape();
    let shapes = &shape.routes;
    admin
        .view
        .routes()
        .iter()
        .map(|r| RouteInfo::of(r, shapes.get(r.name())))
        .collect()
}

async fn joins(State(admin): State<Arc<Admin>>) -> Json<Vec<JoinInfo>> {
    Json(join_infos(&admin.view))
}

/// The joins leaving every publish-subscribe channel, as they are now.
fn join_infos(view: &FlowView) -> Vec<JoinInfo> {
    let mut joins = Vec::new();
    for (channel, _) in view.channels().iter() {
        let eip_core::channel::Channel::PublishSubscribe(source) = channel else {
            continue;
        };
        for join in source.joins().iter() {
            joins.push(JoinInfo {
                from: join.source().to_owned(),
                to: join.destination().name().to_owned(),
                hops: join.hops(),
                archival: join.is_archival(),
                filter: join.filter().map(|f| f.description().to_owned()),
            });
        }
    }
    joins
}

async fn exchanges(State(admin): State<Arc<Admin>>) -> Json<Vec<ExchangeInfo>> {
    Json(exchange_infos(&admin.view))
}

async fn exchange(
    State(admin): State<Arc<Admin>>,
    Path(name): Path<String>,
) -> Answer<ExchangeInfo> {
    let all = exchange_infos(&admin.view);
    match all.iter().position(|x| x.name == name) {
        Some(at) => Ok(Json(all[at].clone())),
        None => Err(unknown(
            "exchange",
            &name,
            all.iter().map(|x| x.name.as_str()),
        )),
    }
}

/// Every exchange on the bus, by name, with its bindings as they are now.
fn exchange_infos(view: &FlowView) -> Vec<ExchangeInfo> {
    let mut names = view.bus().exchange_names();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let exchange = view.bus().exchange(&name).ok()?;
            let bindings = exchange
                .bindings()
                .into_iter()
                .map(|(id, binding)| BindingInfo {
                    id: id.to_string(),
                    key: binding.key().map(|k| k.as_str().to_owned()),
                    to: binding
                        .targets()
                        .iter()
                        .map(|c| c.name().to_owned())
                        .collect(),
                })
                .collect();
            Some(ExchangeInfo {
                alternate: exchange.alternate().map(|c| c.name().to_owned()),
                name,
                bindings,
            })
        })
        .collect()
}

async fn adapters(State(admin): State<Arc<Admin>>) -> Json<Vec<AdapterInfo>> {
    Json(adapter_infos(&admin.view))
}

fn adapter_infos(view: &FlowView) -> Vec<AdapterInfo> {
    view.adapters()
        .iter()
        .map(|a| AdapterInfo::of(a, view))
        .collect()
}
