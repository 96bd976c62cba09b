//! Where a step takes a key of a message from (an idempotent receiver's key, an aggregator's
//! correlation): a jq program's output (`key:`), a header's value (`header:`), or the step's
//! default (the message id, the `correlation-id` header). One reader serves every step, so the
//! keys are written, checked and described the same way everywhere.

use eip_steps::aggregate::Key;

use super::expr::{Jq, jq_key, jq_setting};
use crate::diagnostic::Check;
use crate::settings::Settings;

/// Where a step takes a message's key from.
#[derive(Debug, Clone)]
pub(super) enum KeyOf {
    /// The step's default, with its description (`by message id`).
    Default(DefaultKey),
    /// A header's value.
    Header(String),
    /// A jq program's one output.
    Jq(Jq),
}

/// A step's key when it sets neither `key` nor `header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DefaultKey {
    /// The message id.
    MessageId,
    /// The `correlation-id` header (what a split sets on its parts).
    CorrelationId,
}

/// The key `settings` set: `key` (jq), `header`, or neither (`default`); not both.
pub(super) fn key_of(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    default: DefaultKey,
) -> Option<KeyOf> {
    match (settings.get("key"), settings.get("header")) {
        (Some(_), Some(_)) => {
            settings.report_entry(
                check,
                "`key` and `header` contradict each other".to_owned(),
                Some("key messages by a jq program (`key:`) or by a header (`header:`): keep one"),
            );
            None
        }
        (None, Some(_)) => Some(KeyOf::Header(
            settings
                .required_text(check, "header", "name the header holding the key")?
                .value,
        )),
        (Some(_), None) => jq_setting(check, settings, "key").map(KeyOf::Jq),
        (None, None) => Some(KeyOf::Default(default)),
    }
}

impl KeyOf {
    /// The key as eip-steps computes it.
    pub(super) fn key(&self) -> Key {
        match self {
            KeyOf::Default(DefaultKey::MessageId) => Key::message_id(),
            KeyOf::Default(DefaultKey::CorrelationId) => {
                Key::header(eip_core::message::names::CORRELATION_ID)
            }
            KeyOf::Header(name) => Key::header(name),
            KeyOf::Jq(jq) => jq_key(jq),
        }
    }

    /// In a few words: `by .order`, `by header x-request`, `by message id`.
    pub(super) fn describe(&self) -> String {
        match self {
            KeyOf::Default(DefaultKey::MessageId) => "by message id".to_owned(),
            KeyOf::Default(DefaultKey::CorrelationId) => "by correlation id".to_owned(),
            KeyOf::Header(name) => format!("by header {name}"),
            KeyOf::Jq(jq) => format!("by {}", jq.source()),
        }
    }
}
