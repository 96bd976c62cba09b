//! What can go wrong in the HTTP adapter: at start (a configuration, a bind) and per message
//! sent out.
//!
//! No variant carries a bearer token, and no `Display` prints one: an error may end up in a log
//! line or a death record.

use std::net::SocketAddr;

/// One thing wrong with an HTTP adapter's configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// The environment variable said to hold a bearer token is not set (or not text, or
    /// empty).
    #[error("environment variable `{0}` (the bearer token) is not set")]
    MissingEnv(String),
    /// The inbound path is not an absolute path.
    #[error("path `{0}` must start with `/`")]
    InvalidPath(String),
    /// A header name that HTTP does not allow.
    #[error("`{0}` is not a valid HTTP header name")]
    InvalidHeaderName(String),
    /// A limit or timeout that must be above zero is zero.
    #[error("`{0}` must be greater than zero")]
    Zero(&'static str),
    /// The reply timeout of request-reply mode is not shorter than the whole-request timeout,
    /// so a late reply would be cut off with 408 instead of answered with 504.
    #[error("reply timeout {reply:?} must be shorter than the request timeout {request:?}")]
    ReplyOutlastsRequest {
        /// The reply timeout.
        reply: std::time::Duration,
        /// The whole-request timeout.
        request: std::time::Duration,
    },
    /// The request-reply channel is not on the bus.
    #[error("no channel `{0}` on the bus")]
    UnknownChannel(String),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(String),
}

/// The configuration of an HTTP adapter is wrong: every problem found, not just the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", list(.problems))]
pub struct ConfigError {
    /// What is wrong, in the order found.
    pub problems: Vec<ConfigProblem>,
}

fn list(problems: &[ConfigProblem]) -> String {
    let texts: Vec<String> = problems.iter().map(ToString::to_string).collect();
    texts.join("; ")
}

impl ConfigError {
    /// `Ok` if nothing was found.
    pub(crate) fn check(problems: Vec<ConfigProblem>) -> Result<(), ConfigError> {
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError { problems })
        }
    }
}

/// The inbound server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpInboundError {
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The configured address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Why one message could not be delivered by [`HttpOutbound`](super::HttpOutbound).
///
/// [`is_permanent`](Self::is_permanent) tells the consumer whether another attempt could
/// succeed: give it to [`Consumer::permanent_errors`](eip_core::endpoint::Consumer::permanent_errors)
/// so 4xx answers are dead-lettered at once while connect errors, timeouts and 5xx answers are
/// redelivered with the channel's backoff.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpOutboundError {
    /// No connection could be made (refused, unreachable, DNS). Transient.
    #[error("{method} {url}: cannot connect: {source}")]
    Connect {
        /// The request method.
        method: &'static str,
        /// The URL.
        url: String,
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The request did not complete within the client's timeout. Transient.
    #[error("{method} {url}: timed out")]
    Timeout {
        /// The request method.
        method: &'static str,
        /// The URL.
        url: String,
    },
    /// The connection failed while sending or reading. Transient.
    #[error("{method} {url}: {source}")]
    Transport {
        /// The request method.
        method: &'static str,
        /// The URL.
        url: String,
        /// The client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with a status that says another attempt may succeed: 5xx, 408 or
    /// 429. Transient.
    #[error("{method} {url}: answered {status}: {body}")]
    Unavailable {
        /// The request method.
        method: &'static str,
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the response body (at most 512 bytes, lossily as UTF-8).
        body: String,
    },
    /// The server refused the request with a status that another attempt would get again
    /// (4xx but 408 and 429, and any 1xx or 3xx: redirects are not followed). Permanent.
    #[error("{method} {url}: answered {status}: {body}")]
    Refused {
        /// The request method.
        method: &'static str,
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the response body (at most 512 bytes, lossily as UTF-8).
        body: String,
    },
    /// The URL template could not be filled from this message (a missing header). Permanent.
    #[error("message {message}: {reason}")]
    Template {
        /// The message's id.
        message: String,
        /// What was missing.
        reason: String,
    },
}

impl HttpOutboundError {
    /// Whether another attempt would fail the same way (the message should be dead-lettered
    /// at once).
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            HttpOutboundError::Refused { .. } | HttpOutboundError::Template { .. }
        )
    }
}

/// Whether `error` is, or is caused by, a permanent [`HttpOutboundError`]. For services whose
/// error is boxed by tower layers (`Timeout`, `RateLimit`): a layer's own errors (a timeout)
/// are not permanent.
///
/// ```
/// use eip_adapters::http::is_permanent;
/// use tower::BoxError;
///
/// let elapsed: BoxError = Box::new(tower::timeout::error::Elapsed::new());
/// assert!(!is_permanent(elapsed.as_ref()));
/// ```
pub fn is_permanent(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(http) = error.downcast_ref::<HttpOutboundError>() {
            return http.is_permanent();
        }
        next = error.source();
    }
    false
}
