//! The HTTP channel adapter: requests in, requests out.
//!
//! **Inbound** ([`HttpInbound`]) serves HTTP/1.1 and turns each `POST` to its path into a
//! message: the body is the payload, `Content-Type` the content type, and the configured request
//! headers are copied under their lower-case names. It answers only once the channel has
//! decided, so an answer is a promise:
//!
//! | answer | when |
//! | --- | --- |
//! | **202** `{"id": "…", "outcome": "accepted"}` | the channel accepted the message (a durable channel: it is on disk) |
//! | **202** `{"id": "…", "outcome": "invalid", "reason": "…"}` | a Datatype Channel found it misfit and put it on its invalid message channel |
//! | **200** with the reply's payload and content type | request-reply mode: the correlated reply came |
//! | **504** | request-reply mode: no reply within the timeout |
//! | **429** with `Retry-After` | the channel stayed full for the configured `accept_wait`: nothing is buffered past the channel's capacity |
//! | **503** with `Retry-After` | the channel refused the message (deleted, or its store failed) |
//! | **401** with `WWW-Authenticate: Bearer` | a token is configured and the request lacks it (checked before the body is read) |
//! | **413** | the body is over `body_limit` |
//! | **415** / **400** | a JSON route got another content type / a body that does not parse (but see Datatype Channels above) |
//! | **408** | the whole request took longer than `request_timeout` |
//! | **404** / **405** | another path / another method |
//!
//! A full channel is answered 429 rather than 503 because it says "this client, slow down": a
//! load balancer takes 503 for a sick server and may drain it, when the server is only busy.
//!
//! A client that sends its headers slower than `header_read_timeout` (slowloris), or keeps a
//! connection idle past it, is disconnected; at most `max_connections` are served at once. The
//! bearer token is read from the environment variable the configuration names (a missing one is
//! an error at start, naming it), compared in constant time, and never written to an error or a
//! log line.
//!
//! **Outbound** ([`HttpOutbound`]) is a `tower::Service<Message>` that `POST`s or `PUT`s each
//! message to a [`UrlTemplate`]. A 2xx answer acks the message. Connect errors, timeouts, 5xx,
//! 408 and 429 are transient: the consumer redelivers with the channel's backoff, then
//! dead-letters with reason `max-redeliveries`. Other answers (4xx) are permanent: told so with
//! [`Consumer::permanent_errors`](eip_core::endpoint::Consumer::permanent_errors), the consumer
//! dead-letters the message at once with reason `rejected`, the status and the first 512 bytes
//! of the answer in the death record. Timeouts, rate and concurrency limits are tower layers
//! (see [`HttpOutbound`]).
//!
//! Plain HTTP only: TLS, in and out, is a later feature (put a TLS-terminating proxy in front
//! meanwhile).
//!
//! ```no_run
//! use eip_adapters::http::{HttpInbound, HttpInboundConfig};
//! use eip_core::channel::PointToPoint;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let orders = PointToPoint::new("orders", 100)?;
//! let config = HttpInboundConfig::new("127.0.0.1:0".parse()?, "/orders");
//! let server = HttpInbound::new(config, orders.clone())?.bind().await?;
//! // curl -d '{"sku": 1}' -H 'content-type: application/json' http://<addr>/orders
//! println!("POST to http://{}/orders", server.local_addr());
//! # server.shutdown().await;
//! # Ok(()) }
//! ```

mod bearer;
mod client;
mod error;
mod inbound;
mod lookup;
mod outbound;

pub use error::{ConfigError, ConfigProblem, HttpInboundError, HttpOutboundError, is_permanent};
pub use inbound::{HttpInbound, HttpInboundConfig, HttpInboundServer};
pub use lookup::{HttpLookup, HttpLookupConfig, LookupMethod, LookupRequest};
pub use outbound::{HttpOutbound, HttpOutboundConfig, OutboundMethod, TemplateError, UrlTemplate};
