//! HTTP lookups: a request made for a message, whose answer is used to enrich it (EIP's
//! Content Enricher), not to deliver it.

use std::time::Duration;

use bytes::Bytes;
use eip_core::Message;
use reqwest::header::{self, HeaderName};

use super::client::{self, ClientSettings};
use super::error::{ConfigError, HttpOutboundError};
use super::outbound::UrlTemplate;

/// The request method of an [`HttpLookup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LookupMethod {
    /// `GET` the URL: the usual lookup.
    #[default]
    Get,
    /// `POST` the message's payload to the URL, for a service that computes its answer from
    /// a document (a price for an order).
    Post,
}

impl LookupMethod {
    /// `GET` or `POST`.
    pub fn as_str(self) -> &'static str {
        match self {
            LookupMethod::Get => "GET",
            LookupMethod::Post => "POST",
        }
    }
}

/// Where and how an [`HttpLookup`] asks. Plain data: a flow file can fill it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpLookupConfig {
    /// The URL, with placeholders filled from each message.
    pub url: UrlTemplate,
    /// `GET` or `POST`.
    pub method: LookupMethod,
    /// How long making a connection may take.
    pub connect_timeout: Duration,
    /// How long one request may take in all, answer included.
    pub request_timeout: Duration,
    /// The environment variable holding a bearer token to send, if any. Read once, at
    /// [`HttpLookup::new`].
    pub bearer_token_env: Option<String>,
    /// Message headers sent as request headers of the same name (text headers only).
    pub copy_headers: Vec<String>,
}

impl HttpLookupConfig {
    /// `GET` `url`, with 5 s to connect and 30 s per request, no token, no headers copied.
    pub fn new(url: UrlTemplate) -> Self {
        HttpLookupConfig {
            url,
            method: LookupMethod::Get,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            bearer_token_env: None,
            copy_headers: Vec::new(),
        }
    }

    /// The request for `message`; a placeholder it can not fill is a permanent error.
    pub fn request(&self, message: &Message) -> Result<LookupRequest, HttpOutboundError> {
        let url = self
            .url
            .render(message)
            .map_err(|reason| HttpOutboundError::Template {
                message: message.id().to_string(),
                reason,
            })?;
        let body = match self.method {
            LookupMethod::Get => None,
            LookupMethod::Post => Some(message.payload().clone()),
        };
        Ok(LookupRequest {
            method: self.method,
            url,
            body,
        })
    }
}

/// The request an [`HttpLookup`] makes for one message, made before it is sent: what a cache
/// keys its answer by, and what a dry run says it would ask.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LookupRequest {
    /// The method.
    pub method: LookupMethod,
    /// The URL, filled in.
    pub url: String,
    /// The body (`POST` only): the message's payload.
    pub body: Option<Bytes>,
}

/// A client that looks things up over HTTP. Cheap to clone: clones share their connections.
///
/// An [`HttpLookup`] sends a `GET` (or a `POST` of the message's payload) to a
/// [`UrlTemplate`] filled from the message, and reads the answer:
///
/// | answer | [`HttpLookup::lookup`] gives |
/// | --- | --- |
/// | **2xx** | `Ok(Some(body))` (an empty body for a 204) |
/// | **404** | `Ok(None)`: there is nothing to look up for this message |
/// | 5xx, 408, 429, a connect error, a timeout | `Err`, transient ([`HttpOutboundError::is_permanent`] is false): another attempt may succeed |
/// | any other status (4xx, 3xx: redirects are not followed) | `Err`, permanent: another attempt would get the same answer |
///
/// The errors are the outbound adapter's ([`HttpOutboundError`]), with the same meaning, and
/// the client is built the same way (a connect timeout, a timeout per request, no redirects,
/// an optional bearer token read from an environment variable, message headers copied). The
/// message id goes along as `Message-Id`.
#[derive(Debug, Clone)]
pub struct HttpLookup {
    client: reqwest::Client,
    copy_headers: Vec<HeaderName>,
}

impl HttpLookup {
    /// A client for `config`; every problem with it is reported (a missing token variable by
    /// name).
    pub fn new(config: HttpLookupConfig) -> Result<Self, ConfigError> {
        let (client, copy_headers) = client::build(&ClientSettings {
            connect_timeout: config.connect_timeout,
            request_timeout: config.request_timeout,
            bearer_token_env: config.bearer_token_env.as_deref(),
            copy_headers: &config.copy_headers,
        })?;
        Ok(HttpLookup {
            client,
            copy_headers,
        })
    }

    /// Sends `request` (made by [`HttpLookupConfig::request`] from `message`, whose headers
    /// are copied): the answer's body, or `None` for a 404.
    pub async fn lookup(
        &self,
        message: &Message,
        request: &LookupRequest,
    ) -> Result<Option<Bytes>, HttpOutboundError> {
        let method = request.method.as_str();
        let url = request.url.as_str();
        let response = self
            .build(message, request)
            .send()
            .await
            .map_err(|source| client::not_sent(method, url, source))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(client::refused(method, url, response).await);
        }
        let body = response
            .bytes()
            .await
            .map_err(|source| client::not_sent(method, url, source))?;
        Ok(Some(body))
    }

    fn build(&self, message: &Message, request: &LookupRequest) -> reqwest::RequestBuilder {
        let mut builder = match request.method {
            LookupMethod::Get => self.client.get(&request.url),
            LookupMethod::Post => {
                let content_type = message
                    .content_type()
                    .ok()
                    .flatten()
                    .unwrap_or("application/json");
                self.client
                    .post(&request.url)
                    .header(header::CONTENT_TYPE, content_type)
                    .body(request.body.clone().unwrap_or_default())
            }
        };
        builder = builder
            .header(header::ACCEPT, "application/json")
            .header("message-id", message.id().to_string());
        client::copy_headers(builder, message, &self.copy_headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(url: &str, method: LookupMethod) -> HttpLookupConfig {
        let mut config = HttpLookupConfig::new(UrlTemplate::parse(url).unwrap());
        config.method = method;
        config
    }

    #[test]
    fn the_request_is_filled_from_the_message_and_posts_its_payload() {
        let msg = Message::builder(r#"{"a": 1}"#)
            .header("customer", "c/1")
            .build();
        let get = lookup("http://h/customers/{header.customer}", LookupMethod::Get);
        let request = get.request(&msg).unwrap();
        assert_eq!(request.url, "http://h/customers/c%2F1");
        assert_eq!(request.body, None);
        let post = lookup("http://h/prices", LookupMethod::Post);
        assert_eq!(
            post.request(&msg).unwrap().body.as_deref(),
            Some(&br#"{"a": 1}"#[..])
        );
        let missing = get.request(&Message::new("{}")).unwrap_err();
        assert!(missing.is_permanent(), "{missing}");
    }

    #[test]
    fn a_missing_token_variable_is_named() {
        let mut config = HttpLookupConfig::new(UrlTemplate::parse("http://h/x").unwrap());
        config.bearer_token_env = Some("EIP_LOOKUP_TEST_UNSET_TOKEN".into());
        let e = HttpLookup::new(config).unwrap_err();
        assert!(e.to_string().contains("EIP_LOOKUP_TEST_UNSET_TOKEN"), "{e}");
    }
}
