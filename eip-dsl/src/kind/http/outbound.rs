//! `http-out`: messages are `POST`ed (or `PUT`) to a URL filled from each message.

use eip_adapters::http::{HttpOutbound, HttpOutboundConfig, OutboundMethod, UrlTemplate};
use futures::future::BoxFuture;
use tower::BoxError;

use crate::diagnostic::Check;
use crate::kind::{AdapterConfig, Drawing, Endpoint, Entry, Kind, Site};
use crate::settings::Settings;
use crate::spec::{AdapterKind, Direction};
use crate::template;

/// `http-out`
pub(crate) static OUTBOUND: Kind = Kind {
    id: AdapterKind::adapter("http-out", Direction::Outbound),
    feature: "http",
    keys: &[&[
        "url",
        "method",
        "connect-timeout",
        "request-timeout",
        "bearer-token-env",
        "headers",
    ]],
    drawing: Drawing::InputOutput,
    check,
};

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn AdapterConfig>> {
    let url = settings
        .required_text(
            check,
            "url",
            "add `url: http://HOST:PORT/PATH`, where `{id}` and `{header.NAME}` are filled from each message",
        )
        .and_then(|url| {
            template::setting(
                check,
                settings,
                "url",
                &url,
                UrlTemplate::SYNTAX,
                |t| UrlTemplate::new(t).map_err(|e| e.reason),
                "an `http://` URL with a host; `{id}`, `{header.NAME}`, `{$.path}` are filled \
                 from each message, percent-encoded (see the book's Templates page)",
            )
        });
    let mut config = HttpOutboundConfig::new(url?);
    if let Some(method) = settings.one_of(
        check,
        "method",
        &[("post", OutboundMethod::Post), ("put", OutboundMethod::Put)],
    ) {
        config.method = method;
    }
    if let Some(d) = settings.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    if let Some(d) = settings.positive_duration(check, "request-timeout") {
        config.request_timeout = d;
    }
    config.bearer_token_env = settings.env_name(check, "bearer-token-env");
    if let Some(headers) = settings.list(check, "headers") {
        config.copy_headers = headers.into_iter().map(|h| h.value).collect();
    }
    Some(Box::new(config))
}

impl AdapterConfig for HttpOutboundConfig {
    fn endpoint(&self) -> String {
        self.url.as_str().to_owned()
    }

    fn connect<'a>(&'a self, _site: Site<'a>) -> BoxFuture<'a, Result<Endpoint, BoxError>> {
        Box::pin(async move {
            let client = HttpOutbound::new(self.clone())?;
            Ok(Endpoint::outbound(client, |e| {
                eip_adapters::http::is_permanent(e.as_ref())
            }))
        })
    }
}
