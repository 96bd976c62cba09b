//! The outbound HTTP channel adapter: each message is `POST`ed or `PUT` to a URL.
//!
//! [`HttpOutbound`] is a `tower::Service<Message>`: a [`Consumer`](eip_core::endpoint::Consumer)
//! drives it from a channel. The body is the payload, `Content-Type` the message's content type
//! (`application/octet-stream` when it has none), and the message id goes along in the
//! `Message-Id` header so a receiver can drop duplicates: delivery is at least once. A 2xx
//! answer acks the message; what other answers do is told by
//! [`HttpOutboundError::is_permanent`].

mod template;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use eip_core::Message;
use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::bearer::BearerToken;
use super::error::{ConfigError, ConfigProblem, HttpOutboundError};

pub use template::{TemplateError, UrlTemplate};

/// How much of an error answer's body goes into the error (and so the death record).
const BODY_EXCERPT: usize = 512;

/// The request method of an [`HttpOutbound`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutboundMethod {
    /// `POST`, to create.
    #[default]
    Post,
    /// `PUT`, to create or replace at the URL (which then names the resource, say with `{id}`).
    Put,
}

impl OutboundMethod {
    fn as_str(self) -> &'static str {
        match self {
            OutboundMethod::Post => "POST",
            OutboundMethod::Put => "PUT",
        }
    }
}

/// Where and how an [`HttpOutbound`] sends. Plain data: a flow file can fill it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOutboundConfig {
    /// The URL, with `{id}` and `{header.NAME}` placeholders.
    pub url: UrlTemplate,
    /// `POST` or `PUT`.
    pub method: OutboundMethod,
    /// How long making a connection may take.
    pub connect_timeout: Duration,
    /// How long one request may take in all, answer included.
    pub request_timeout: Duration,
    /// The environment variable holding a bearer token to send, if any. Read once, at
    /// [`HttpOutbound::new`].
    pub bearer_token_env: Option<String>,
    /// Message headers sent as request headers of the same name (text headers only).
    pub copy_headers: Vec<String>,
}

impl HttpOutboundConfig {
    /// `POST` to `url`, with 5 s to connect and 30 s per request, no token, no headers
    /// copied.
    pub fn new(url: UrlTemplate) -> Self {
        HttpOutboundConfig {
            url,
            method: OutboundMethod::Post,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            bearer_token_env: None,
            copy_headers: Vec::new(),
        }
    }
}

/// The outbound HTTP channel adapter, a `tower::Service<Message>`.
///
/// Drive it with a consumer told which errors are permanent, so a 4xx answer dead-letters the
/// message at once while a 5xx answer or a connect error is redelivered with the channel's
/// backoff. Timeouts, rate and concurrency limits are tower layers on top:
///
/// ```no_run
/// use std::time::Duration;
/// use eip_adapters::http::{HttpOutbound, HttpOutboundConfig, UrlTemplate, is_permanent};
/// use eip_core::channel::PointToPoint;
/// use eip_core::endpoint::Consumer;
/// use tower::{BoxError, ServiceBuilder};
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let shipments = PointToPoint::new("shipments", 1000)?;
/// let url = UrlTemplate::parse("http://127.0.0.1:9000/shipments/{id}")?;
/// let outbound = HttpOutbound::new(HttpOutboundConfig::new(url))?;
/// let service = ServiceBuilder::new()
///     .concurrency_limit(8) // at most 8 requests in flight
///     .rate_limit(100, Duration::from_secs(1)) // at most 100 requests a second
///     .timeout(Duration::from_secs(10)) // a deadline per attempt
///     .service(outbound);
/// let consumer = Consumer::new(shipments.receiver(), service)
///     .concurrency(8)
///     .permanent_errors(|e: &BoxError| is_permanent(e.as_ref()))
///     .spawn();
/// # consumer.shutdown().await;
/// # Ok(()) }
/// ```
///
/// Plain HTTP only for now: TLS (`https` URLs) is a later feature of this adapter.
#[derive(Debug, Clone)]
pub struct HttpOutbound {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: reqwest::Client,
    url: UrlTemplate,
    method: OutboundMethod,
    copy_headers: Vec<HeaderName>,
}

impl HttpOutbound {
    /// A client for `config`; every problem with it is reported (a missing token variable by
    /// name).
    pub fn new(config: HttpOutboundConfig) -> Result<Self, ConfigError> {
        let mut problems = Vec::new();
        let mut copy_headers = Vec::new();
        for name in &config.copy_headers {
            match HeaderName::try_from(name.as_str()) {
                Ok(header) => copy_headers.push(header),
                Err(_) => problems.push(ConfigProblem::InvalidHeaderName(name.clone())),
            }
        }
        if config.connect_timeout.is_zero() {
            problems.push(ConfigProblem::Zero("connect_timeout"));
        }
        if config.request_timeout.is_zero() {
            problems.push(ConfigProblem::Zero("request_timeout"));
        }
        let mut headers = HeaderMap::new();
        if let Some(var) = &config.bearer_token_env {
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
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .default_headers(headers)
            .build()
            .map_err(|e| ConfigError {
                problems: vec![ConfigProblem::Client(e.to_string())],
            })?;
        Ok(HttpOutbound {
            inner: Arc::new(Inner {
                client,
                url: config.url,
                method: config.method,
                copy_headers,
            }),
        })
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl tower::Service<Message> for HttpOutbound {
    /// The 2xx status answered.
    type Response = StatusCode;
    type Error = HttpOutboundError;
    type Future = BoxFuture<Result<StatusCode, HttpOutboundError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The client pools connections without bound: limit with `ConcurrencyLimit`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, message: Message) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { inner.deliver(message).await })
    }
}

impl Inner {
    async fn deliver(&self, message: Message) -> Result<StatusCode, HttpOutboundError> {
        let method = self.method.as_str();
        let url = self
            .url
            .render(&message)
            .map_err(|reason| HttpOutboundError::Template {
                message: message.id().to_string(),
                reason,
            })?;
        let request = self.request(&message, &url);
        let response = request.send().await.map_err(|source| {
            let url = url.clone();
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
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(status);
        }
        let body = excerpt(response).await;
        let status = status.as_u16();
        if status >= 500 || status == 408 || status == 429 {
            Err(HttpOutboundError::Unavailable {
                method,
                url,
                status,
                body,
            })
        } else {
            Err(HttpOutboundError::Refused {
                method,
                url,
                status,
                body,
            })
        }
    }

    fn request(&self, message: &Message, url: &str) -> reqwest::RequestBuilder {
        let method = match self.method {
            OutboundMethod::Post => reqwest::Method::POST,
            OutboundMethod::Put => reqwest::Method::PUT,
        };
        let content_type = message
            .content_type()
            .ok()
            .flatten()
            .unwrap_or("application/octet-stream");
        let mut request = self
            .client
            .request(method, url)
            .header(header::CONTENT_TYPE, content_type)
            .header("message-id", message.id().to_string())
            .body(message.payload().clone());
        for name in &self.copy_headers {
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
