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
use reqwest::header::{self, HeaderName};

use super::client;
use super::error::{ConfigError, HttpOutboundError};

pub use template::{TemplateError, UrlTemplate};

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
        let (client, copy_headers) = client::build(&client::ClientSettings {
            connect_timeout: config.connect_timeout,
            request_timeout: config.request_timeout,
            bearer_token_env: config.bearer_token_env.as_deref(),
            copy_headers: &config.copy_headers,
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
        let response = request
            .send()
            .await
            .map_err(|source| client::not_sent(method, &url, source))?;
        let status = response.status();
        if status.is_success() {
            return Ok(status);
        }
        Err(client::refused(method, &url, response).await)
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
        let request = self
            .client
            .request(method, url)
            .header(header::CONTENT_TYPE, content_type)
            .header("message-id", message.id().to_string())
            .body(message.payload().clone());
        client::copy_headers(request, message, &self.copy_headers)
    }
}
