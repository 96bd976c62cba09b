//! The inbound HTTP channel adapter: `POST` requests become messages on a channel.
//!
//! See the [module documentation](super) for the answers it gives. [`HttpInbound`] is built from
//! a plain [`HttpInboundConfig`] (checked as a whole: every problem is reported, a missing
//! token variable by name) and a destination, then [bound](HttpInbound::bind) to its address,
//! where it serves HTTP/1.1 until [shut down](HttpInboundServer::shutdown).

mod handler;
mod server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderName;
use eip_core::MessageBus;
use eip_core::channel::Channel;

use super::bearer::BearerToken;
use super::error::{ConfigError, ConfigProblem, HttpInboundError};

pub use server::HttpInboundServer;

/// How an [`HttpInbound`] listens and what it admits. Plain data: a flow file can fill it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpInboundConfig {
    /// Where to listen (port 0: any free port, see [`HttpInboundServer::local_addr`]).
    pub address: SocketAddr,
    /// The path that takes `POST` requests, such as `/orders`.
    pub path: String,
    /// The largest body taken, in bytes; larger requests are answered 413.
    pub body_limit: usize,
    /// The environment variable holding the bearer token requests must carry (401 without
    /// it). Read once, at [`HttpInbound::new`].
    pub bearer_token_env: Option<String>,
    /// Request headers copied to the message, under their lower-case names.
    pub copy_headers: Vec<String>,
    /// Whether the route takes JSON: a body of another content type is answered 415 and one
    /// that does not parse 400, unless the channel is a Datatype Channel, which diverts the
    /// misfit to its invalid message channel itself (answered 202, outcome `invalid`).
    pub json: bool,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may sit idle before its next request; then the connection is closed.
    pub header_read_timeout: Duration,
    /// How long one request may take in all (body included); then it is answered 408.
    pub request_timeout: Duration,
    /// How long a request waits for room in a full channel before it is answered 429.
    pub accept_wait: Duration,
    /// What the `Retry-After` header of a 429 or 503 answer says (whole seconds, at least 1).
    pub retry_after: Duration,
    /// The most connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
}

impl HttpInboundConfig {
    /// Listens on `address` for `POST` requests to `path`, with the defaults: 1 MiB bodies,
    /// no token, no headers copied, any content type, 10 s to send headers, 30 s per request,
    /// 100 ms of waiting for room, `Retry-After: 1`, 1024 connections.
    pub fn new(address: SocketAddr, path: impl Into<String>) -> Self {
        HttpInboundConfig {
            address,
            path: path.into(),
            body_limit: 1024 * 1024,
            bearer_token_env: None,
            copy_headers: Vec::new(),
            json: false,
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            accept_wait: Duration::from_millis(100),
            retry_after: Duration::from_secs(1),
            max_connections: 1024,
        }
    }

    /// Every problem with this configuration: the token variable is read here.
    fn check(&self, problems: &mut Vec<ConfigProblem>) -> Checked {
        if !self.path.starts_with('/') {
            problems.push(ConfigProblem::InvalidPath(self.path.clone()));
        }
        let zeros = [
            ("body_limit", self.body_limit == 0),
            ("header_read_timeout", self.header_read_timeout.is_zero()),
            ("request_timeout", self.request_timeout.is_zero()),
            ("max_connections", self.max_connections == 0),
        ];
        problems.extend(
            zeros
                .into_iter()
                .filter(|(_, zero)| *zero)
                .map(|(field, _)| ConfigProblem::Zero(field)),
        );
        let mut copy_headers = Vec::new();
        for name in &self.copy_headers {
            match HeaderName::try_from(name.as_str()) {
                Ok(header) => copy_headers.push(header),
                Err(_) => problems.push(ConfigProblem::InvalidHeaderName(name.clone())),
            }
        }
        let token = self.bearer_token_env.as_deref().and_then(|var| {
            BearerToken::from_env(var)
                .map_err(|p| problems.push(p))
                .ok()
        });
        Checked {
            copy_headers,
            token,
        }
    }
}

/// What checking a configuration turned its strings into.
struct Checked {
    copy_headers: Vec<HeaderName>,
    token: Option<BearerToken>,
}

/// Where accepted requests go.
#[derive(Clone)]
pub(crate) enum Destination {
    /// Onto a channel; answered 202 once it accepted.
    Channel(Channel),
    /// Onto a bus channel as a request; answered with the correlated reply.
    Request {
        bus: MessageBus,
        channel: Channel,
        timeout: Duration,
    },
}

/// The inbound HTTP channel adapter, configured and not yet listening.
///
/// ```no_run
/// use eip_adapters::http::{HttpInbound, HttpInboundConfig};
/// use eip_core::channel::PointToPoint;
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orders = PointToPoint::new("orders", 1000)?;
/// let mut config = HttpInboundConfig::new("127.0.0.1:8080".parse()?, "/orders");
/// config.bearer_token_env = Some("ORDERS_TOKEN".into());
/// config.copy_headers = vec!["x-customer".into()];
/// let server = HttpInbound::new(config, orders.clone())?.bind().await?;
/// println!("listening on {}", server.local_addr());
/// // ... consume `orders` ...
/// server.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct HttpInbound {
    config: HttpInboundConfig,
    shared: Arc<handler::Shared>,
}

impl HttpInbound {
    /// An adapter sending each request's message to `channel`, answering 202 once the channel
    /// accepted it.
    pub fn new(
        config: HttpInboundConfig,
        channel: impl Into<Channel>,
    ) -> Result<Self, ConfigError> {
        let mut problems = Vec::new();
        let checked = config.check(&mut problems);
        ConfigError::check(problems)?;
        Ok(HttpInbound::assemble(
            config,
            checked,
            Destination::Channel(channel.into()),
        ))
    }

    /// An adapter in request-reply mode: each request's message is sent to the bus channel
    /// `channel` with a return address and waits up to `timeout` for the correlated reply
    /// (see [`MessageBus::request`]), answered 200 with the reply's payload and content type,
    /// or 504 when none came.
    pub fn request_reply(
        config: HttpInboundConfig,
        bus: &MessageBus,
        channel: &str,
        timeout: Duration,
    ) -> Result<Self, ConfigError> {
        let mut problems = Vec::new();
        let checked = config.check(&mut problems);
        if timeout >= config.request_timeout {
            problems.push(ConfigProblem::ReplyOutlastsRequest {
                reply: timeout,
                request: config.request_timeout,
            });
        }
        let target = bus.channel(channel);
        if target.is_err() {
            problems.push(ConfigProblem::UnknownChannel(channel.to_owned()));
        }
        ConfigError::check(problems)?;
        let channel = target.map_err(|_| ConfigError {
            problems: vec![ConfigProblem::UnknownChannel(channel.to_owned())],
        })?;
        let destination = Destination::Request {
            bus: bus.clone(),
            channel,
            timeout,
        };
        Ok(HttpInbound::assemble(config, checked, destination))
    }

    /// Answers every request `503 Service Unavailable` (with `Retry-After`, saying the
    /// adapter is paused) while `gate`'s switch is paused: a Detour, the clients' retries
    /// waiting for it to be resumed. Set once; a second gate is ignored.
    pub fn pause_gate(self, gate: eip_core::endpoint::PauseGate) -> Self {
        let _ = self.shared.pause.set(gate);
        self
    }

    fn assemble(config: HttpInboundConfig, checked: Checked, destination: Destination) -> Self {
        let shared = handler::Shared {
            destination,
            token: checked.token,
            copy_headers: checked.copy_headers,
            json: config.json,
            accept_wait: config.accept_wait,
            retry_after: config.retry_after.as_secs().max(1),
            pause: std::sync::OnceLock::new(),
        };
        HttpInbound {
            config,
            shared: Arc::new(shared),
        }
    }

    /// The adapter as an axum `Router`, to merge into an application of your own. The
    /// connection limits (header read timeout, whole-request timeout, connection count) are
    /// then that application's to set: they belong to the server, not the route.
    pub fn into_router(self) -> axum::Router {
        handler::router(&self.config.path, self.config.body_limit, self.shared)
    }

    /// Binds the configured address and serves until [`HttpInboundServer::shutdown`].
    pub async fn bind(self) -> Result<HttpInboundServer, HttpInboundError> {
        let address = self.config.address;
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| HttpInboundError::Bind { address, source })?;
        let limits = server::Limits {
            header_read_timeout: self.config.header_read_timeout,
            request_timeout: self.config.request_timeout,
            max_connections: self.config.max_connections,
        };
        let router = self.into_router();
        server::start(listener, router, limits)
            .map_err(|source| HttpInboundError::Bind { address, source })
    }
}
