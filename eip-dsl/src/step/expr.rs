//! The jq programs of steps, in an `eip` built with jq or without. Without the `jq` feature a
//! setting that holds one is refused with the feature to build, and [`Jq`] is a type with no
//! values, so the steps that take one are written once for both builds.

use crate::diagnostic::Check;
use crate::settings::Settings;

#[cfg(feature = "jq")]
pub(super) use eip_steps::expr::Jq;

/// No jq program: this `eip` is built without the `jq` feature.
#[cfg(not(feature = "jq"))]
#[derive(Debug, Clone)]
pub(super) enum Jq {}

#[cfg(not(feature = "jq"))]
impl Jq {
    pub(super) fn source(&self) -> &str {
        match *self {}
    }

    pub(super) fn one(
        &self,
        _: &eip_core::message::Message,
    ) -> Result<serde_json::Value, std::convert::Infallible> {
        match *self {}
    }

    pub(super) fn one_payload(
        &self,
        _: &eip_core::message::Message,
    ) -> Result<bytes::Bytes, std::convert::Infallible> {
        match *self {}
    }
}

/// The jq program under `key`, compiled; a problem (with its place inside the program) when it
/// does not compile, or when this `eip` is built without jq.
#[cfg(feature = "jq")]
pub(super) fn jq_setting(check: &mut Check<'_>, settings: &Settings<'_>, key: &str) -> Option<Jq> {
    let text = settings.required_text(check, key, super::transform::JQ_HELP)?;
    super::transform::compile(check, &text, &settings.key(key))
}

#[cfg(not(feature = "jq"))]
pub(super) fn jq_setting(check: &mut Check<'_>, settings: &Settings<'_>, key: &str) -> Option<Jq> {
    settings.report_at(
        check,
        key,
        &format!("`{key}` is a jq program, and this eip is built without the cargo feature `jq`"),
        Some("build eip with it: `cargo build -p eip-dsl --features jq`"),
    );
    None
}

/// The key a jq program computes: its one output when it is a string, written out when it is
/// a number or a boolean; anything else (or an error) makes the message invalid, with why.
#[cfg(feature = "jq")]
pub(super) fn jq_key(jq: &Jq) -> eip_steps::aggregate::Key {
    let jq = jq.clone();
    eip_steps::aggregate::Key::computed(move |msg| match jq.one(msg) {
        Ok(serde_json::Value::String(text)) => Ok(text),
        Ok(value @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
            Ok(value.to_string())
        }
        Ok(other) => Err(format!(
            "`{}` gave {}, not a string, number or boolean",
            jq.source(),
            match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Array(_) => "an array",
                _ => "an object",
            }
        )),
        Err(e) => Err(format!("`{}`: {e}", jq.source())),
    })
}

#[cfg(not(feature = "jq"))]
pub(super) fn jq_key(jq: &Jq) -> eip_steps::aggregate::Key {
    match *jq {}
}
