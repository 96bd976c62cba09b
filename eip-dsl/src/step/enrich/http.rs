//! `enrich: {http: ...}`: the lookup is an HTTP request, read with the keys of `http-out`
//! (`url`, `connect-timeout`, `bearer-token-env`, `headers`) and `method: get` (the default)
//! or `post` (the payload is sent).

use std::time::Duration;

use eip_adapters::http::{
    HttpLookup, HttpLookupConfig, LookupMethod, LookupRequest, UrlTemplate, is_permanent,
};
use eip_core::message::Message;
use serde_json::Value;
use tokio::sync::OnceCell;
use tower::BoxError;

use super::{Answer, Request};
use eip_adapters::env::redact_url;

use crate::diagnostic::{Check, is_secret_name};
use crate::settings::Settings;
use crate::template;

/// The keys of `http:`.
const KEYS: &[&str] = &[
    "url",
    "method",
    "connect-timeout",
    "bearer-token-env",
    "headers",
];

/// The help of `url`.
const URL_HELP: &str = "an `http://` URL with a host; `{id}`, `{header.NAME}`, `{$.path}` and \
                        `{jq: EXPR}` are filled from each message, percent-encoded (see the \
                        book's Templates page)";

/// A checked `http:` lookup.
#[derive(Debug, Clone)]
pub(super) struct HttpSource {
    config: HttpLookupConfig,
}

/// `http:`; `timeout` is the step's deadline, after which the client's own comes.
pub(super) fn read(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    timeout: Option<Duration>,
) -> Option<HttpSource> {
    let http = settings.map(check, "http", KEYS)?;
    let text = http.required_text(check, "url", &format!("add `url:`, {URL_HELP}"))?;
    let url = template::setting(
        check,
        &http,
        "url",
        &text,
        UrlTemplate::SYNTAX,
        |t| UrlTemplate::new(t).map_err(|e| e.reason),
        URL_HELP,
    )?;
    let mut config = HttpLookupConfig::new(url);
    if let Some(method) = http.one_of(
        check,
        "method",
        &[
            ("get", LookupMethod::Get),
            ("GET", LookupMethod::Get),
            ("post", LookupMethod::Post),
            ("POST", LookupMethod::Post),
        ],
    ) {
        config.method = method;
    }
    if let Some(d) = http.positive_duration(check, "connect-timeout") {
        config.connect_timeout = d;
    }
    config.bearer_token_env = http.env_name(check, "bearer-token-env");
    if let Some(headers) = http.list(check, "headers") {
        config.copy_headers = headers.into_iter().map(|h| h.value).collect();
    }
    if let Some(timeout) = timeout {
        config.request_timeout = timeout + Duration::from_secs(1);
    }
    Some(HttpSource { config })
}

impl HttpSource {
    pub(super) fn describe(&self) -> String {
        format!(
            "{} {}",
            self.config.method.as_str(),
            self.config.url.as_str()
        )
    }

    pub(super) fn build(&self) -> HttpAsk {
        HttpAsk {
            config: self.config.clone(),
            client: OnceCell::new(),
        }
    }
}

/// What the dry run says of `request`: its method and URL, a password in the URL (in the
/// user info, or a query parameter named like a secret's) shown as `***`.
pub(super) fn would(request: &LookupRequest) -> String {
    let url = shown_url(&request.url);
    match request.body {
        Some(_) => format!(
            "would call {} {url} with the payload",
            request.method.as_str()
        ),
        None => format!("would call {} {url}", request.method.as_str()),
    }
}

/// `url` with its secrets as `***`: the user info's password, and the value of each query
/// parameter whose name is a secret's (`password`, `api_key`, `token`).
fn shown_url(url: &str) -> String {
    let url = redact_url(url);
    let Some((base, query)) = url.split_once('?') else {
        return url;
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if is_secret_name(name) => format!("{name}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", pairs.join("&"))
}

/// A running HTTP lookup. The client (which reads the token) is made at the first request.
pub(super) struct HttpAsk {
    config: HttpLookupConfig,
    client: OnceCell<HttpLookup>,
}

impl HttpAsk {
    pub(super) fn request(&self, msg: &Message) -> Result<Request, String> {
        match self.config.request(msg) {
            Ok(request) => Ok(Request::Http(msg.clone(), request)),
            Err(e) => Err(e.to_string()),
        }
    }

    pub(super) async fn ask(
        &self,
        msg: &Message,
        request: &LookupRequest,
    ) -> Result<Answer, BoxError> {
        let client = self
            .client
            .get_or_try_init(|| async { HttpLookup::new(self.config.clone()) })
            .await?;
        let body = match client.lookup(msg, request).await {
            Ok(Some(body)) => body,
            Ok(None) => return Ok(Answer::Found(Value::Null)),
            Err(e) if is_permanent(&e) => return Ok(Answer::Unusable(e.to_string())),
            Err(e) => return Err(e.into()),
        };
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Answer::Found(Value::Null));
        }
        Ok(match serde_json::from_slice(&body) {
            Ok(answer) => Answer::Found(answer),
            Err(e) => Answer::Unusable(format!(
                "the answer of {} {} is not JSON: {e}",
                request.method.as_str(),
                request.url
            )),
        })
    }
}
