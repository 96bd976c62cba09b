//! `enrich`: the Content Enricher. The step looks something up for each message (an HTTP
//! request, or an SQL query with named parameters) and merges the answer into the payload
//! with a jq program.
//!
//! ```yaml
//! steps:
//!   - enrich:
//!       http: {url: 'http://127.0.0.1:8080/customers/{$.customer_id}'}
//!       merge: '. + {customer: $answer}'
//!       timeout: 2s
//!       retry: {max-attempts: 3, backoff: 100ms}
//!       cache: {ttl: 60s, max-entries: 10000}
//!   - enrich:
//!       sql:
//!         url: postgres://127.0.0.1/test
//!         query: 'select name, tier from customers where id = :id'
//!         params: {id: '.customer_id'}
//!       merge: '. + {customer: $answer}'
//! ```
//!
//! **The answer.** `$answer` in `merge` is what was found, as JSON: the HTTP answer's body
//! (an empty body is `null`), or, for a query, its first row as an object (`rows: all`: an
//! array of every row). Nothing found is `null`: an HTTP 404, a query without rows (`[]`
//! with `rows: all`). `.` is the payload, `$headers` and `$id` are there as in every jq
//! program. What `merge` makes is the new payload; the message keeps its id and headers.
//!
//! **Failures.** A lookup that fails (no connection, no answer within `timeout`, an HTTP 5xx,
//! 408 or 429, an SQL error) is made again per `retry`, then fails the route for the
//! message: it goes back to its channel, which redelivers it per its redelivery policy and
//! dead-letters it with reason `max-redeliveries` and the lookup's error. An answer that can
//! not be used is about the message, not the service, and another attempt would get it
//! again: an HTTP 4xx other than 404, an answer that is not JSON, a column of a type that is
//! not read as JSON, a jq error in `merge` or in a parameter, a URL placeholder or a query
//! parameter the message can not fill. The message
//! is then invalid: dead-lettered at once with reason `invalid` and the reason.
//!
//! **The cache** (optional) keeps what was found (`null` included, failures never) by the
//! request made (the URL filled in; the query's bound values), for `ttl`, at most
//! `max-entries` answers (when full, the oldest goes). Two messages that miss at the same
//! moment both ask.
//!
//! The dry run (`eip route`) looks nothing up: the message goes on unchanged, and with
//! `--steps` the step says the request it would make for this message: `would call GET
//! http://127.0.0.1:8080/customers/42` (a password in the URL shown as `***`), or `would
//! query `select ... where id = :id` with :id = 42`. `timeout`, `concurrency`, `circuit-breaker` and
//! `retry` are those of every step that calls out (see [`calls`](super::calls)). The
//! connection (an SQL pool, the HTTP client with its token) is made at the first lookup.

// An `eip` built with jq but neither lookup refuses every enrich step: what runs one is there
// but never made.
#![cfg_attr(
    not(any(feature = "http", feature = "sql")),
    allow(dead_code, unreachable_code, unused_variables)
)]

mod cache;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "sql")]
mod sql;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eip_core::MessageBus;
use eip_core::message::Message;
use eip_steps::expr::Jq;
use futures::future::BoxFuture;
use serde_json::Value;
use tower::{BoxError, ServiceExt};

use self::cache::{Cache, CacheSettings};
use super::calls::{self, Call, CallLimits};
use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::{Check, Problem};
use crate::settings::Settings;
use crate::spec::Located;

pub(super) static ENRICH: StepKind = StepKind {
    name: "enrich",
    feature: Some("jq"),
    main: "merge",
    keys: &[
        "http",
        "sql",
        "merge",
        "cache",
        "retry",
        "timeout",
        "concurrency",
        "circuit-breaker",
        "on-error",
    ],
    check,
};

/// A checked enrich step.
#[derive(Debug, Clone)]
pub struct EnrichConfig {
    source: Source,
    merge: Merge,
    limits: CallLimits,
    cache: Option<CacheSettings>,
}

/// Where the step looks.
#[derive(Debug, Clone)]
enum Source {
    #[cfg(feature = "http")]
    Http(http::HttpSource),
    #[cfg(feature = "sql")]
    Sql(sql::SqlSource),
    /// No lookup is built into this eip (neither `http` nor `sql`): never made.
    #[cfg(not(any(feature = "http", feature = "sql")))]
    Unbuilt(std::convert::Infallible),
}

impl Source {
    fn describe(&self) -> String {
        match self {
            #[cfg(feature = "http")]
            Source::Http(s) => s.describe(),
            #[cfg(feature = "sql")]
            Source::Sql(s) => s.describe(),
            #[cfg(not(any(feature = "http", feature = "sql")))]
            Source::Unbuilt(never) => match *never {},
        }
    }

    /// The running lookup.
    fn lookup(&self) -> Lookup {
        match self {
            #[cfg(feature = "http")]
            Source::Http(s) => Lookup::Http(Box::new(s.build())),
            #[cfg(feature = "sql")]
            Source::Sql(s) => Lookup::Sql(s.build()),
            #[cfg(not(any(feature = "http", feature = "sql")))]
            Source::Unbuilt(never) => match *never {},
        }
    }
}

/// A request made for a message, before it is sent: what the cache keys by.
#[derive(Debug, Clone)]
enum Request {
    #[cfg(feature = "http")]
    Http(Message, eip_adapters::http::LookupRequest),
    #[cfg(feature = "sql")]
    Sql(eip_adapters::sql::lookup::BoundQuery),
    /// No lookup is built into this eip (neither `http` nor `sql`): never made.
    #[cfg(not(any(feature = "http", feature = "sql")))]
    Unbuilt(std::convert::Infallible),
}

impl Request {
    fn key(&self) -> String {
        match self {
            #[cfg(feature = "http")]
            Request::Http(_, r) => {
                let mut key = format!("{} {}", r.method.as_str(), r.url);
                if let Some(body) = &r.body {
                    // Escaped, so two bodies that differ in bytes that are not UTF-8 differ here.
                    key.push_str(&format!("\n{body:?}"));
                }
                key
            }
            #[cfg(feature = "sql")]
            Request::Sql(q) => q.key(),
            #[cfg(not(any(feature = "http", feature = "sql")))]
            Request::Unbuilt(never) => match *never {},
        }
    }
}

/// What a lookup gave: an answer to merge, or a refusal that makes the message invalid.
#[derive(Debug, Clone)]
enum Answer {
    Found(Value),
    Unusable(String),
}

/// The help of `merge`.
const MERGE_HELP: &str = "a jq program making the new payload from the payload (`.`) and what \
                          was found (`$answer`), such as `. + {customer: $answer}`";

/// What a merge program is run inside: the input is `[payload, answer]`. The newline ends a
/// `#` comment the program may end with.
const MERGE_PREFIX: &str = ".[1] as $answer | .[0] | (";
const MERGE_SUFFIX: &str = "\n)";

/// The merge program, as written and as run.
#[derive(Debug, Clone)]
struct Merge {
    written: String,
    jq: Jq,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let before = check.problems.len();
    let limits = calls::read(check, settings, true);
    let timeout = limits.as_ref().and_then(|l| l.timeout);
    let source = source(check, settings, timeout);
    let merge = settings
        .required_text(check, "merge", MERGE_HELP)
        .and_then(|text| merge(check, &text, &settings.key("merge")));
    let cache = cache::read(check, settings);
    if check.problems.len() > before {
        return None;
    }
    Some(Box::new(EnrichConfig {
        source: source?,
        merge: merge?,
        limits: limits?,
        cache,
    }))
}

/// `http:` or `sql:`, exactly one.
fn source(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    timeout: Option<Duration>,
) -> Option<Source> {
    match (settings.get("http"), settings.get("sql")) {
        (Some(_), Some(_)) => {
            settings.report_entry(
                check,
                "`http` and `sql` contradict each other".to_owned(),
                Some("a step looks in one place: use one enrich step for each"),
            );
            None
        }
        (None, None) => {
            settings.missing(
                check,
                "http",
                "add `http: {url: ...}` for an HTTP lookup, or `sql: {url: ..., query: ...}` \
                 for a database query",
            );
            None
        }
        (Some(_), None) => http_source(check, settings, timeout),
        (None, Some(_)) => sql_source(check, settings),
    }
}

#[cfg(feature = "http")]
fn http_source(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    timeout: Option<Duration>,
) -> Option<Source> {
    http::read(check, settings, timeout).map(Source::Http)
}

#[cfg(not(feature = "http"))]
fn http_source(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _timeout: Option<Duration>,
) -> Option<Source> {
    not_built(check, settings, "http")
}

#[cfg(feature = "sql")]
fn sql_source(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Source> {
    sql::read(check, settings).map(Source::Sql)
}

#[cfg(not(feature = "sql"))]
fn sql_source(check: &mut Check<'_>, settings: &Settings<'_>) -> Option<Source> {
    not_built(check, settings, "sql")
}

#[cfg(not(all(feature = "http", feature = "sql")))]
fn not_built(check: &mut Check<'_>, settings: &Settings<'_>, feature: &str) -> Option<Source> {
    let help = format!("build eip with it: `cargo build -p eip-dsl --features {feature}`");
    settings.report_at(
        check,
        feature,
        &format!(
            "an `{feature}` lookup needs the cargo feature `{feature}`, which this eip is built \
             without"
        ),
        Some(&help),
    );
    None
}

/// The merge program, compiled inside its frame; a problem points into what was written.
fn merge(check: &mut Check<'_>, text: &Located<String>, key: &str) -> Option<Merge> {
    let framed = format!("{MERGE_PREFIX}{}{MERGE_SUFFIX}", text.value);
    match Jq::compile(&framed) {
        Ok(jq) => Some(Merge {
            written: text.value.clone(),
            jq,
        }),
        Err(e) => {
            let offset = e
                .offset()
                .saturating_sub(MERGE_PREFIX.len())
                .min(text.value.len());
            let at = check.inside(text, offset);
            check.report(
                Problem::new(
                    format!(
                        "invalid jq: invalid jq expression at byte {offset}: {}",
                        e.kind()
                    ),
                    at,
                )
                .with_key(key)
                .with_help(MERGE_HELP),
            );
            None
        }
    }
}

impl Merge {
    /// The new payload: what the program makes of the payload and the answer.
    fn apply(&self, msg: &Message, answer: Value) -> Result<Bytes, String> {
        let payload = msg.json_value().map_err(|e| e.to_string())?;
        let input = serde_json::to_vec(&[payload, &answer]).map_err(|e| e.to_string())?;
        let framed = Message::from_parts(msg.id(), msg.headers().clone(), input.into());
        self.jq
            .one_payload(&framed)
            .map_err(|e| format!("merge `{}`: {e}", self.written))
    }
}

impl StepConfig for EnrichConfig {
    fn describe(&self) -> String {
        let limits = self.limits.describe();
        let mut described = format!("enrich {} | {}", self.source.describe(), self.merge.written);
        if !limits.is_empty() {
            described.push_str(&format!(" ({limits})"));
        }
        described
    }

    fn label(&self) -> Option<String> {
        Some(format!("enrich {}", self.source.describe()))
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let lookup = Arc::new(self.source.lookup());
        let asking = lookup.clone();
        let service = tower::service_fn(move |request: Request| {
            let lookup = asking.clone();
            async move { lookup.ask(request).await }
        });
        Ok(Box::new(Enrich {
            lookup,
            call: self.limits.wrap(service),
            merge: self.merge.clone(),
            cache: self.cache.map(Cache::new),
        }))
    }
}

/// A running lookup.
enum Lookup {
    // Boxed: its templates (with what each reads of a payload) make it several times the
    // size of the other.
    #[cfg(feature = "http")]
    Http(Box<http::HttpAsk>),
    #[cfg(feature = "sql")]
    Sql(sql::SqlAsk),
    /// No lookup is built into this eip (neither `http` nor `sql`): never made.
    #[cfg(not(any(feature = "http", feature = "sql")))]
    Unbuilt(std::convert::Infallible),
}

impl Lookup {
    /// The request for `msg`, or why the message can not make one.
    fn request(&self, msg: &Message) -> Result<Request, String> {
        match self {
            #[cfg(feature = "http")]
            Lookup::Http(l) => l.request(msg),
            #[cfg(feature = "sql")]
            Lookup::Sql(l) => l.request(msg),
            #[cfg(not(any(feature = "http", feature = "sql")))]
            Lookup::Unbuilt(never) => match *never {},
        }
    }

    /// What the dry run says of `request`, which it does not make: `would call GET
    /// http://h/customers/42`, secrets in the URL shown as `***`.
    fn would(&self, request: &Request) -> String {
        match (self, request) {
            #[cfg(feature = "http")]
            (Lookup::Http(_), Request::Http(_, r)) => http::would(r),
            #[cfg(feature = "sql")]
            (Lookup::Sql(l), Request::Sql(q)) => l.would(q),
            #[allow(unreachable_patterns)]
            _ => "would look something up".to_owned(),
        }
    }

    /// Makes the request. An error is a failure another attempt may not have.
    async fn ask(&self, request: Request) -> Result<Answer, BoxError> {
        match (self, request) {
            #[cfg(feature = "http")]
            (Lookup::Http(l), Request::Http(msg, r)) => l.ask(&msg, &r).await,
            #[cfg(feature = "sql")]
            (Lookup::Sql(l), Request::Sql(q)) => l.ask(&q).await,
            #[allow(unreachable_patterns)]
            _ => Err("a lookup was handed another kind's request".into()),
        }
    }
}

struct Enrich {
    lookup: Arc<Lookup>,
    call: Call<Request, Answer>,
    merge: Merge,
    cache: Option<Cache>,
}

impl fmt::Debug for Enrich {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Enrich")
            .field("merge", &self.merge.written)
            .finish_non_exhaustive()
    }
}

impl Enrich {
    /// The request for `msg`, which must be JSON for the merge (so a payload that is not is
    /// refused before anything is asked).
    fn request(&self, msg: &Message) -> Result<Request, String> {
        msg.json_value().map_err(|e| e.to_string())?;
        self.lookup.request(msg)
    }

    fn invalid(msg: Message, error: String) -> Made {
        Made::instead(Side::Invalid { msg, error })
    }

    fn merged(&self, msg: Message, answer: Value) -> Made {
        match self.merge.apply(&msg, answer) {
            Ok(payload) => {
                let (id, headers, _) = msg.into_parts();
                Made::next(Message::from_parts(id, headers, payload))
            }
            Err(error) => Self::invalid(msg, error),
        }
    }
}

impl RouteStep for Enrich {
    /// The dry run looks nothing up: it says the request this message would make; a message
    /// that can not make its request is invalid, as it would be in a running flow; any other
    /// goes on unchanged.
    fn decide(&self, msg: Message) -> Made {
        match self.request(&msg) {
            Ok(request) => {
                let would = self.lookup.would(&request);
                Made::next(msg).noted(would)
            }
            Err(error) => Self::invalid(msg, error),
        }
    }

    fn calls_out(&self) -> bool {
        true
    }

    fn call(&self, msg: Message) -> BoxFuture<'_, Result<Made, BoxError>> {
        Box::pin(async move {
            let request = match self.request(&msg) {
                Ok(request) => request,
                Err(error) => return Ok(Self::invalid(msg, error)),
            };
            let key = self.cache.as_ref().map(|_| request.key());
            if let (Some(cache), Some(key)) = (&self.cache, &key)
                && let Some(answer) = cache.get(key)
            {
                return Ok(self.merged(msg, answer));
            }
            match self.call.clone().oneshot(request).await? {
                Answer::Found(answer) => {
                    if let (Some(cache), Some(key)) = (&self.cache, key) {
                        cache.put(key, answer.clone());
                    }
                    Ok(self.merged(msg, answer))
                }
                Answer::Unusable(error) => Ok(Self::invalid(msg, error)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(program: &str, payload: &str, answer: Value) -> Result<Value, String> {
        let framed = format!("{MERGE_PREFIX}{program}{MERGE_SUFFIX}");
        let merge = Merge {
            written: program.to_owned(),
            jq: Jq::compile(&framed).map_err(|e| e.to_string())?,
        };
        let bytes = merge.apply(&Message::new(payload.to_owned()), answer)?;
        serde_json::from_slice(&bytes).map_err(|e| e.to_string())
    }

    #[test]
    fn the_merge_sees_the_payload_as_dot_and_the_answer_as_a_variable() {
        let answer = serde_json::json!({"name": "Ada"});
        assert_eq!(
            merged(". + {who: $answer.name}", r#"{"id": 1}"#, answer.clone()),
            Ok(serde_json::json!({"id": 1, "who": "Ada"}))
        );
        // Definitions, and a comment at the end, stay inside the frame.
        assert_eq!(
            merged(
                "def up: ascii_upcase; $answer.name | up # shout",
                "{}",
                answer
            ),
            Ok(serde_json::json!("ADA"))
        );
        let e = merged("$answer.name | ascii_upcase", "{}", Value::Null).unwrap_err();
        assert!(
            e.starts_with("merge `$answer.name | ascii_upcase`: jq"),
            "{e}"
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn posted_bodies_that_differ_in_bytes_have_different_cache_keys() {
        use eip_adapters::http::{LookupMethod, LookupRequest};
        let key = |body: &'static [u8]| {
            let request = LookupRequest {
                method: LookupMethod::Post,
                url: "http://h/prices".into(),
                body: Some(Bytes::from_static(body)),
            };
            Request::Http(Message::new("{}"), request).key()
        };
        assert_ne!(key(b"\xff"), key(b"\xfe"));
        assert_ne!(key(b"a"), key(b"b"));
    }
}
