//! The admin server: a running flow's Control Bus, over HTTP.
//!
//! `eip run --admin 127.0.0.1:9090`, or a flow file's `admin:` section, starts it on the
//! flow's tokio runtime beside the flow. It serves:
//!
//! - `GET /api/flow`: the whole picture: channels, routes, joins, exchanges, adapters and
//!   bridges, the durable store, readiness.
//! - `GET /api/channels`, `GET /api/channels/{name}`: each channel's kind, where it keeps its
//!   messages (memory, durable, broker), its counters (in, out, waiting, in flight, dead
//!   letters, invalid, ...) and its rates (messages a second over the last
//!   [`RATE_INTERVAL`], sampled by a task the server owns).
//! - `GET /api/routes`, `/api/routes/{name}`: each route's channel, steps, action and
//!   counters, with its last failure and when.
//! - `GET /api/joins`, `GET /api/exchanges` (with their bindings), `GET /api/adapters`
//!   (adapters and bridges: kind, direction, channel, endpoint, connected).
//! - `GET /health/live` (200 while the process serves) and `GET /health/ready` (503 with what
//!   the flow waits for, until every adapter and bridge is connected and every subscription
//!   bound; then 200).
//! - `GET /metrics`: Prometheus' text format (see [`metrics`]).
//! - `GET /api/openapi.json`: the OpenAPI 3.1 document of all of the above.
//! - `GET /`: the web console (see [`console`]), and `GET /api/graph.svg`, the flow it draws.
//!
//! Every answer is JSON (but `/metrics`), from the typed structs of [`model`]; an unknown
//! name is a 404 whose body names the closest known one.
//!
//! **Security.** The server listens on a loopback address unless told otherwise. Listening
//! on any other address needs a bearer token, read from an environment variable (the
//! flow's `admin.token`, else `EIP_ADMIN_TOKEN`): without one the server refuses to start.
//! Once a token is set, every endpoint but `/health/live` needs `Authorization: Bearer
//! TOKEN` (compared in constant time); a request without it, or with another token, is
//! answered 401 with a JSON body saying which. The read side changes nothing in the flow.
//!
//! What is read where: counters from the channels' and routes' own atomics, at the time of
//! the request (the rates from the sampler's last two samples); joins and bindings from the
//! bus as they are now; the routes' steps and actions, and the adapters' kinds, from the
//! checked plan; readiness from the flow's [`Readiness`](crate::compile::Readiness).

mod api;
pub mod browse;
pub mod changes;
pub mod console;
pub mod dead_letters;
mod health;
pub mod metrics;
pub mod model;
pub mod operate;
mod rates;
mod security;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::compile::FlowView;
use crate::control::RuntimeChanges;
use crate::plan::{AdminPlan, Plan};

pub use api::ENDPOINTS;
pub use rates::RATE_INTERVAL;
pub use security::DEFAULT_TOKEN_ENV;

/// The OpenAPI 3.1 document of the API, as served at `/api/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// Why the admin server did not start.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// `--admin` is not an address and port.
    #[error("`{0}` is not an IP address and port (such as `127.0.0.1:9090`)")]
    BadAddress(String),
    /// A non-loopback address without a token.
    #[error(
        "the admin server would listen on {addr}, which is not a loopback address, without a \
         token: set the environment variable `{variable}` to a bearer token, or listen on \
         127.0.0.1"
    )]
    TokenRequired {
        /// The address.
        addr: SocketAddr,
        /// The variable the token would be read from.
        variable: String,
    },
    /// The flow's `admin.token` names a variable that is not set.
    #[error("the admin token's environment variable `{0}` is not set (or empty)")]
    TokenMissing(String),
    /// Another process listens there.
    #[error("the admin server can not listen on {0}: the address is in use")]
    InUse(SocketAddr),
    /// Binding failed otherwise.
    #[error("the admin server can not listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// Where the server listens and the token it asks for.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminOptions {
    /// The address to bind (port 0: any free port; [`AdminServer::local_addr`] says which).
    pub listen: SocketAddr,
    /// The bearer token every endpoint but liveness needs; `None`: no token asked.
    pub token: Option<String>,
}

impl std::fmt::Debug for AdminOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminOptions")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .finish()
    }
}

impl AdminOptions {
    /// The server `eip run` starts, if any: at `flag` (`--admin`, which wins) or the flow's
    /// `admin.listen`; with the token from the variable the flow's `admin.token` names, else
    /// from [`DEFAULT_TOKEN_ENV`] if set. `lookup` reads an environment variable.
    pub fn resolve(
        flag: Option<&str>,
        plan: Option<&AdminPlan>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<AdminOptions>, AdminError> {
        let listen = match (flag, plan) {
            (Some(text), _) => crate::validate::admin::parse_listen(text)
                .ok_or_else(|| AdminError::BadAddress(text.to_owned()))?,
            (None, Some(plan)) => plan.listen,
            (None, None) => return Ok(None),
        };
        let named = plan.and_then(|p| p.token_env.as_deref());
        let variable = named.unwrap_or(DEFAULT_TOKEN_ENV);
        let token = lookup(variable).filter(|t| !t.is_empty());
        if token.is_none() && named.is_some() {
            return Err(AdminError::TokenMissing(variable.to_owned()));
        }
        if token.is_none() && !listen.ip().is_loopback() {
            return Err(AdminError::TokenRequired {
                addr: listen,
                variable: variable.to_owned(),
            });
        }
        Ok(Some(AdminOptions { listen, token }))
    }
}

/// A running admin server; stopped by [`shutdown`](Self::shutdown), or when dropped.
#[derive(Debug)]
pub struct AdminServer {
    addr: SocketAddr,
    token_required: bool,
    stop: Option<oneshot::Sender<()>>,
    serving: JoinHandle<()>,
    sampler: JoinHandle<()>,
}

impl AdminServer {
    /// Binds `options.listen` and serves `view`'s flow (`plan` is what it was compiled from),
    /// on the current tokio runtime. Refuses a non-loopback address without a token.
    pub async fn start(
        options: AdminOptions,
        view: FlowView,
        plan: &Plan,
        changes: Arc<RuntimeChanges>,
    ) -> Result<AdminServer, AdminError> {
        if options.token.is_none() && !options.listen.ip().is_loopback() {
            return Err(AdminError::TokenRequired {
                addr: options.listen,
                variable: DEFAULT_TOKEN_ENV.to_owned(),
            });
        }
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::AddrInUse => AdminError::InUse(options.listen),
                _ => AdminError::Bind {
                    addr: options.listen,
                    source,
                },
            })?;
        let addr = listener.local_addr().map_err(|source| AdminError::Bind {
            addr: options.listen,
            source,
        })?;
        let rates = rates::Rates::default();
        let sampler = tokio::spawn(rates.clone().sample(view.clone(), RATE_INTERVAL));
        let token_required = options.token.is_some();
        let admin = Arc::new(api::Admin {
            shape: std::sync::Mutex::new((view.generation(), Arc::new(model::Shape::of(plan)))),
            view,
            changes,
            rates,
            token: options.token.map(security::Token::new),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let app = api::router(admin);
        let serving = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "the admin server stopped");
            }
        });
        Ok(AdminServer {
            addr,
            token_required,
            stop: Some(stop),
            serving,
            sampler,
        })
    }

    /// The address it is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether every endpoint but liveness asks for the token.
    pub fn token_required(&self) -> bool {
        self.token_required
    }

    /// What `eip run` prints at start: `admin: http://ADDR (token required)`.
    pub fn describe(&self) -> String {
        let access = if self.token_required {
            "token required"
        } else {
            "loopback only"
        };
        format!("admin: http://{} ({access})", self.addr)
    }

    /// Stops taking connections and waits, at most `limit`, for the requests in progress.
    pub async fn shutdown(mut self, limit: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.sampler.abort();
        let serving = &mut self.serving;
        if tokio::time::timeout(limit, serving).await.is_err() {
            self.serving.abort();
        }
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.sampler.abort();
        self.serving.abort();
    }
}
