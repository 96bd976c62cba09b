//! Message Translator: a new payload and headers, computed by jq from the message.
//!
//! A [`Translate`] holds up to one payload expression and a list of header changes, all
//! [`Jq`] expressions compiled when the route is built. [`Translate::apply`] runs every one of
//! them over the *original* message (its payload, parsed once, its `$headers` and `$id`), then
//! makes the changes:
//!
//! - [`payload`](TranslateBuilder::payload): the one output, as compact JSON, becomes the
//!   payload, and `content-type` becomes `application/json`.
//! - [`set_header`](TranslateBuilder::set_header): the one output becomes the header's value: a
//!   string a string header, an integer an integer header, any other number a float header, a
//!   boolean a boolean header, an array or an object its compact JSON text (a string header), and
//!   `null` removes the header.
//! - [`remove_header`](TranslateBuilder::remove_header): the header goes.
//!
//! Header changes are made in the order they were added, after `content-type` is set, so a
//! `set_header("content-type", ...)` has the last word. Headers not named stay as they were.
//! The id stays too: the result is the same message, changed (Camel keeps the exchange id across
//! a translator; a new id would break correlation, deduplication and the message's history).
//!
//! `apply` is pure and synchronous, the one function both a running route and the dry run `eip
//! route` call. When any expression fails (the payload is not JSON, a jq `error`, not exactly one
//! output), nothing is changed and [`TranslateError`] names the part that failed. As a step,
//! [`TranslateLayer`] wraps a service: [`TranslateService`] applies the translation, calls the
//! inner service with the result, and on failure does not call it but hands the original message
//! back in [`StepError::Failed`](crate::error::StepError), for the invalid message channel.
//!
//! Content Filter and Normalizer are the same step: a payload expression that keeps only some
//! fields (`{id, total}`), or one that brings several formats to one (`if .v == 1 then {id:
//! .orderId} else . end`).
//!
//! ```
//! use eip_core::Message;
//! use eip_core::message::HeaderValue;
//! use eip_steps::expr::Jq;
//! use eip_steps::translate::Translate;
//!
//! let translate = Translate::builder()
//!     .payload(Jq::compile("{id: .id, total: (.items | map(.price * .qty) | add)}").unwrap())
//!     .set_header("customer", Jq::compile(".customer.name").unwrap())
//!     .remove_header("trace")
//!     .build();
//! let msg = Message::builder(r#"{"id": 7, "customer": {"name": "Ada"}, "items": [{"price": 2.5, "qty": 2}]}"#)
//!     .header("trace", "abc")
//!     .header("desk", "fx")
//!     .build();
//! let id = msg.id();
//! let out = translate.apply(msg).unwrap();
//! assert_eq!(out.payload_str(), Some(r#"{"id":7,"total":5.0}"#));
//! assert_eq!(out.content_type().unwrap(), Some("application/json"));
//! assert_eq!(out.headers().get("customer"), Some(&HeaderValue::Str("Ada".into())));
//! assert!(!out.headers().contains("trace"));
//! assert_eq!(out.headers().get("desk"), Some(&HeaderValue::Str("fx".into())));
//! assert_eq!(out.id(), id);
//! ```

mod layer;

use std::fmt;

use eip_core::Message;
use eip_core::message::{HeaderName, HeaderValue, names};
use jaq_json::{Num, Val};

use crate::expr::{self, Demand, Jq, RunError};

pub use layer::{TranslateFuture, TranslateLayer, TranslateService};

/// The error a [`TranslateService`] returns: the translation failed (the message handed back),
/// or the inner service did.
pub type StepError<E> = crate::error::StepError<E, TranslateError>;

/// A Message Translator: a payload expression and header changes. Build one with
/// [`Translate::builder`]; see the [module documentation](self) for the rules.
#[derive(Clone, Debug, Default)]
pub struct Translate {
    payload: Option<Jq>,
    headers: Vec<HeaderChange>,
    /// What the expressions read of the payload, together: only that is built.
    reads: Demand,
}

#[derive(Clone, Debug)]
enum HeaderChange {
    Set(HeaderName, Jq),
    Remove(HeaderName),
}

/// Builds a [`Translate`].
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct TranslateBuilder {
    translate: Translate,
}

impl TranslateBuilder {
    /// The new payload: the one output of `jq`, as compact JSON (content type
    /// `application/json`).
    pub fn payload(mut self, jq: Jq) -> Self {
        self.translate.payload = Some(jq);
        self
    }

    /// Sets header `name` to the one output of `jq` (`null` removes it).
    pub fn set_header(mut self, name: impl Into<HeaderName>, jq: Jq) -> Self {
        self.translate
            .headers
            .push(HeaderChange::Set(name.into(), jq));
        self
    }

    /// Removes header `name`.
    pub fn remove_header(mut self, name: impl Into<HeaderName>) -> Self {
        self.translate
            .headers
            .push(HeaderChange::Remove(name.into()));
        self
    }

    /// The translator.
    pub fn build(mut self) -> Translate {
        let t = &mut self.translate;
        let sets = t.headers.iter().filter_map(|change| match change {
            HeaderChange::Set(_, jq) => Some(jq.demand()),
            HeaderChange::Remove(_) => None,
        });
        t.reads = Demand::of_all(t.payload.iter().map(Jq::demand).chain(sets));
        self.translate
    }
}

/// Which part of a translation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The payload expression.
    Payload,
    /// The expression of this header.
    Header(HeaderName),
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Payload => f.write_str("payload"),
            Part::Header(name) => write!(f, "header `{name}`"),
        }
    }
}

/// A translation that failed: the part whose expression failed, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("translate {part}: {error}")]
pub struct TranslateError {
    /// The part that failed (for a payload that is not JSON: the first part that reads it).
    pub part: Part,
    /// Why.
    #[source]
    pub error: RunError,
}

impl Translate {
    /// A builder for a translator that changes nothing yet.
    pub fn builder() -> TranslateBuilder {
        TranslateBuilder::default()
    }

    /// A layer that puts this translator in front of a service.
    pub fn layer(self) -> TranslateLayer {
        TranslateLayer::new(self)
    }

    /// The payload expression, if any.
    pub fn payload(&self) -> Option<&Jq> {
        self.payload.as_ref()
    }

    /// The message translated, or why not (and then nothing changed). Pure: the same message
    /// gives the same result.
    pub fn apply(&self, mut msg: Message) -> Result<Message, TranslateError> {
        let Some(first) = self.first_part() else {
            // Only removals: no expression to run, the payload need not be JSON.
            self.change_headers(&mut msg, Vec::new());
            return Ok(msg);
        };
        let mut input = expr::parse(&msg, &self.reads)
            .map_err(|error| TranslateError { part: first, error })?;
        // The last expression gets the parsed payload itself, the others a shared copy: jq
        // changes a value it holds alone in place (`.total = ...`, `del(.x)`) and copies a
        // shared one first.
        let mut left = usize::from(self.payload.is_some()) + self.sets();
        let mut next_input = || {
            left -= 1;
            match left {
                0 => std::mem::take(&mut input),
                _ => input.clone(),
            }
        };
        let payload = match &self.payload {
            None => None,
            Some(jq) => Some(
                jq.one_val(next_input(), &msg)
                    .and_then(|v| expr::to_payload(&v))
                    .map_err(|error| TranslateError {
                        part: Part::Payload,
                        error,
                    })?,
            ),
        };
        let mut values = Vec::with_capacity(self.sets());
        for change in &self.headers {
            if let HeaderChange::Set(name, jq) = change {
                let value = jq
                    .one_val(next_input(), &msg)
                    .map_err(|error| TranslateError {
                        part: Part::Header(name.clone()),
                        error,
                    })?;
                values.push(header_value(&value));
            }
        }
        if let Some(payload) = payload {
            let (id, headers, _) = msg.into_parts();
            // Set over the message's headers, which stay shared (not copied for one header).
            let headers =
                headers.overlaid([(names::CONTENT_TYPE.into(), "application/json".into())]);
            msg = Message::from_parts(id, headers, payload);
        }
        self.change_headers(&mut msg, values);
        Ok(msg)
    }

    /// How many headers an expression sets.
    fn sets(&self) -> usize {
        self.headers
            .iter()
            .filter(|change| matches!(change, HeaderChange::Set(..)))
            .count()
    }

    /// The part a payload that is not JSON is blamed on: the first expression run.
    fn first_part(&self) -> Option<Part> {
        if self.payload.is_some() {
            return Some(Part::Payload);
        }
        self.headers.iter().find_map(|change| match change {
            HeaderChange::Set(name, _) => Some(Part::Header(name.clone())),
            HeaderChange::Remove(_) => None,
        })
    }

    /// Makes the header changes, in order; `values` holds the computed value of each `Set`.
    fn change_headers(&self, msg: &mut Message, values: Vec<Option<HeaderValue>>) {
        let mut values = values.into_iter();
        for change in &self.headers {
            match change {
                HeaderChange::Set(name, _) => match values.next().flatten() {
                    Some(value) => msg.headers_mut().insert(name.clone(), value),
                    None => {
                        msg.headers_mut().remove(name);
                    }
                },
                HeaderChange::Remove(name) => {
                    msg.headers_mut().remove(name);
                }
            }
        }
    }
}

/// A jq output as a header value; `None` removes the header.
fn header_value(v: &Val) -> Option<HeaderValue> {
    Some(match v {
        Val::Null => return None,
        Val::Bool(b) => HeaderValue::Bool(*b),
        Val::TStr(s) | Val::BStr(s) => HeaderValue::Str(String::from_utf8_lossy(s).into_owned()),
        Val::Num(Num::Int(i)) => HeaderValue::Int(*i as i64),
        Val::Num(Num::Float(f)) if !f.is_finite() => return None,
        Val::Num(Num::Float(f)) => HeaderValue::Float(*f),
        Val::Num(n) => {
            let digits = n.to_string();
            match digits.parse::<i64>() {
                Ok(i) => HeaderValue::Int(i),
                Err(_) => match digits.parse::<f64>() {
                    Ok(f) if f.is_finite() => HeaderValue::Float(f),
                    _ => return None,
                },
            }
        }
        // An array or an object: its JSON text; one that is not JSON, as jaq writes it.
        Val::Arr(_) | Val::Obj(_) => HeaderValue::Str(match expr::to_payload(v) {
            Ok(json) => String::from_utf8_lossy(&json).into_owned(),
            Err(_) => v.to_string(),
        }),
    })
}
