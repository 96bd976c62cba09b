//! Templates in a flow file: eip's one template language ([`eip_core::template`]), with jq
//! placeholders (`{jq: EXPR}`) when `eip` is built with the cargo feature `jq`.
//!
//! Every template a flow file writes (a route's `to` and `recipient-list` targets, an
//! adapter's `subject`, `topic`, `routing-key`, `stream`, `name`, `append`, `url`, a timer's
//! `payload`) is parsed here, so every placeholder means the same thing everywhere and a
//! problem is reported the same way: at its byte inside the value, with the key. Without the
//! feature, `{jq: ...}` is still recognised, and refused saying this `eip` is built without jq
//! (rather than as an unknown placeholder).

use std::fmt;
#[cfg(not(feature = "jq"))]
use std::sync::Arc;

#[cfg(not(feature = "jq"))]
use eip_core::template::Computed;
use eip_core::template::{PlaceholderKind, Syntax, Template, TemplateError};

use crate::diagnostic::Check;
use crate::settings::Settings;
use crate::spec::Located;

/// The kinds a flow file's templates take beyond eip-core's.
#[cfg(feature = "jq")]
const KINDS: &[&dyn PlaceholderKind] = &[&eip_steps::expr::JqPlaceholder];
#[cfg(not(feature = "jq"))]
const KINDS: &[&dyn PlaceholderKind] = &[&WithoutJq];

/// `{jq: ...}` in an `eip` built without jq: refused, saying so.
#[cfg(not(feature = "jq"))]
struct WithoutJq;

#[cfg(not(feature = "jq"))]
impl PlaceholderKind for WithoutJq {
    fn name(&self) -> &str {
        "jq"
    }

    fn compile(&self, _source: &str, offset: usize) -> Result<Arc<dyn Computed>, TemplateError> {
        Err(TemplateError {
            offset,
            reason: "a `{jq: ...}` placeholder needs the cargo feature `jq`, which this eip is \
                     built without"
                .to_owned(),
        })
    }
}

/// `text` parsed with `syntax` (a destination's, a file name's) and the flow file's kinds.
pub(crate) fn parse(text: &str, syntax: Syntax<'_>) -> Result<Template, TemplateError> {
    syntax.kinds(KINDS).parse(text)
}

/// The template written at `key` (`text`), parsed with `syntax` and the flow file's kinds and
/// made into what the adapter takes by `make`; or the problem reported with `help`: one that
/// does not parse at its byte inside the value, one the adapter refuses (`make`'s error) at the
/// value.
#[cfg_attr(
    not(any(
        feature = "file",
        feature = "http",
        feature = "nats",
        feature = "mqtt",
        feature = "amqp",
        feature = "redis"
    )),
    allow(dead_code)
)]
pub(crate) fn setting<T, E: fmt::Display>(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    key: &str,
    text: &Located<String>,
    syntax: Syntax<'_>,
    make: impl FnOnce(Template) -> Result<T, E>,
    help: &str,
) -> Option<T> {
    let template = match parse(&text.value, syntax) {
        Ok(template) => template,
        Err(e) => {
            let at = check.inside(text, e.offset);
            let message = format!("invalid `{key}`: {}", e.reason);
            settings.report_at_value(check, key, at, message, Some(help));
            return None;
        }
    };
    match make(template) {
        Ok(made) => Some(made),
        Err(e) => {
            let message = format!("invalid `{key}`: {e}");
            settings.report_value(check, key, text, message, Some(help));
            None
        }
    }
}
