//! `http-in`: an HTTP server whose `POST` requests on one path become messages.

use std::net::SocketAddr;

use eip_adapters::http::{HttpInbound, HttpInboundConfig, HttpInboundServer};
use futures::future::BoxFuture;
use tower::BoxError;

use crate::diagnostic::Check;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Inbound, Kind, Site, Started};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};

/// `http-in`
pub(crate) static INBOUND: Kind = Kind {
    id: AdapterKind::adapter("http-in", Direction::Inbound),
    feature: "http",
    keys: &[&[
        "to",
        "listen",
        "path",
        "json",
        "body-limit",
        "bearer-token-env",
        "headers",
        "header-read-timeout",
        "request-timeout",
        "accept-wait",
        "retry-after",
        "max-connections",
    ]],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let listen = settings.required_text(check, "listen", "add `listen: 127.0.0.1:8080`");
    let address = listen.and_then(|listen| match listen.value.parse::<SocketAddr>() {
        Ok(address) => Some(address),
        Err(_) => {
            settings.report_value(
                check,
                "listen",
                &listen,
                format!("`{}` is not an address and port", listen.value),
                Some("write an IP address and a port: `127.0.0.1:8080`, `0.0.0.0:8080`, `[::1]:8080`"),
            );
            None
        }
    });
    let path = settings
        .required_text(
            check,
            "path",
            "add `path: /orders`, the path that takes POST requests",
        )
        .and_then(|path| {
            if path.value.starts_with('/') {
                Some(path.value)
            } else {
                settings.report_value(
                    check,
                    "path",
                    &path,
                    format!("`path` must start with `/`, found `{}`", path.value),
                    None,
                );
                None
            }
        });
    let mut config = HttpInboundConfig::new(address?, path?);
    if let Some(json) = settings.boolean(check, "json") {
        config.json = json;
    }
    if let Some(limit) = settings.size(check, "body-limit") {
        config.body_limit = usize::try_from(limit).unwrap_or(usize::MAX);
    }
    config.bearer_token_env = settings.env_name(check, "bearer-token-env");
    if let Some(headers) = settings.list(check, "headers") {
        config.copy_headers = headers
            .into_iter()
            .map(|h| h.value.to_lowercase())
            .collect();
    }
    if let Some(d) = settings.positive_duration(check, "header-read-timeout") {
        config.header_read_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "request-timeout") {
        config.request_timeout = d;
    }
    if let Some(d) = settings.duration(check, "accept-wait") {
        config.accept_wait = d;
    }
    if let Some(d) = settings.duration(check, "retry-after") {
        config.retry_after = d;
    }
    if let Some(n) = settings.whole(check, "max-connections", 1) {
        config.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
    }
    Some(Box::new(config))
}

impl AdapterConfig for HttpInboundConfig {
    fn endpoint(&self) -> String {
        format!("POST http://{}{}", self.address, self.path)
    }

    fn connect<'a>(&'a self, site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let inbound = HttpInbound::new(self.clone(), site.channel.clone())?
                .pause_gate(site.pause.clone());
            let server = inbound.bind().await?;
            Ok(Endpoint::Inbound(Box::new(Bound {
                server,
                path: self.path.clone(),
            })))
        })
    }
}

/// A bound server: it takes requests into its channel from the moment it is bound.
struct Bound {
    server: HttpInboundServer,
    path: String,
}

impl Inbound for Bound {
    fn endpoint(&self) -> Option<String> {
        Some(format!(
            "POST http://{}{}",
            self.server.local_addr(),
            self.path
        ))
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        Some(self.server.local_addr())
    }

    fn start(self: Box<Self>) -> Box<dyn Started> {
        Box::new(Serving(self.server))
    }

    fn abandon(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(self.server.shutdown())
    }
}

struct Serving(HttpInboundServer);

impl Started for Serving {
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(self.0.shutdown())
    }
}
