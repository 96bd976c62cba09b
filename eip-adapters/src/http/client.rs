//! What every HTTP client of the adapter does the same way: the client built from its settings
//! (a connect timeout, a timeout per request, no redirects, an optional bearer token read from
//! an environment variable and marked sensitive), message headers copied onto a request, and
//! failures told apart as [`HttpOutboundError`]s (transient or permanent).

use std::time::Duration;

use eip_core::Message;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::bearer::BearerToken;
use super::error::{ConfigError, ConfigProblem, HttpOutboundError};

/// How much of an error answer's body goes into the error (and so the death record).
const BODY_EXCERPT: usize = 512;

/// The settings a client is built from.
pub(super) struct ClientSettings<'a> {
    pub(super) connect_timeout: Duration,
    pub(super) request_timeout: Duration,
    pub(super) bearer_token_env: Option<&'a str>,
    pub(super) copy_headers: &'a [String],
}

/// The client, and the header names to copy from each message; every problem is reported (a
/// missing token variable by name).
pub(super) fn build(
    settings: &ClientSettings<'_>,
) -> Result<(reqwest::Client, Vec<HeaderName>), ConfigError> {
    let mut problems = Vec::new();
    let mut copy_headers = Vec::new();
    for name in settings.copy_headers {
        match HeaderName::try_from(name.as_str()) {
            Ok(header) => copy_headers.push(header),
            Err(_) => problems.push(ConfigProblem::InvalidHeaderName(name.clone())),
        }
    }
    if settings.connect_timeout.is_zero() {
        problems.push(ConfigProblem::Zero("connect_timeout"));
    }
    if settings.request_timeout.is_zero() {
        problems.push(ConfigProblem::Zero("request_timeout"));
    }
    let mut headers = HeaderMap::new();
    if let Some(var) = settings.bearer_token_env {
        match BearerToken::from_env(var) {
            Ok(token) => match HeaderValue::from_bytes(&token.header_value()) {
                Ok(mut value) => {
                    value.set_sensitive(true);
                    headers.insert(header::AUTHORIZATION, value);
                }
                Err(_) => problems.push(ConfigProblem::Client(format!(
                    "the token in `{var}` is not a valid header value"
                ))),
            },
            Err(problem) => problems.push(problem),
        }
    }
    ConfigError::check(problems)?;
    let client = reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .timeout(settings.request_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(headers)
        .build()
        .map_err(|e| ConfigError {
            problems: vec![ConfigProblem::Client(e.to_string())],
        })?;
    Ok((client, copy_headers))
}

/// `request` with the text headers of `message` named in `names`.
pub(super) fn copy_headers(
    mut request: reqwest::RequestBuilder,
    message: &Message,
    names: &[HeaderName],
) -> reqwest::RequestBuilder {
    for name in names {
        let value = message
            .headers()
            .get(name.as_str())
            .and_then(|v| v.as_str());
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            request = request.header(name, value);
        }
    }
    request
}

/// A request that got no answer: a timeout, no connection, or a broken one (all transient).
pub(super) fn not_sent(
    method: &'static str,
    url: &str,
    source: reqwest::Error,
) -> HttpOutboundError {
    let url = url.to_owned();
    if source.is_timeout() {
        HttpOutboundError::Timeout { method, url }
    } else if source.is_connect() {
        HttpOutboundError::Connect {
            method,
            url,
            source,
        }
    } else {
        HttpOutboundError::Transport {
            method,
            url,
            source,
        }
    }
}

/// An answer that is not a success: 5xx, 408 and 429 are transient, any other permanent. The
/// error holds the start of the answer's body.
pub(super) async fn refused(
    method: &'static str,
    url: &str,
    response: reqwest::Response,
) -> HttpOutboundError {
    let status = response.status().as_u16();
    let body = excerpt(response).await;
    let url = url.to_owned();
    if status >= 500 || status == 408 || status == 429 {
        HttpOutboundError::Unavailable {
            method,
            url,
            status,
            body,
        }
    } else {
        HttpOutboundError::Refused {
            method,
            url,
            status,
            body,
        }
    }
}

/// The start of an error answer's body, lossily as text: enough to say what was wrong, never
/// the whole of a large page.
async fn excerpt(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < BODY_EXCERPT {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    bytes.truncate(BODY_EXCERPT);
    String::from_utf8_lossy(&bytes).trim_end().to_owned()
}
