//! `transform`: the Message Translator. The payload becomes what a jq program makes of it, and
//! headers are set (each to what a jq program makes of the original message) or removed.
//!
//! ```yaml
//! steps:
//!   - transform: '{id: .order_id, total: (.lines | map(.price * .qty) | add)}'
//!   - transform:
//!       payload: '.customer'
//!       set-headers: {region: '.address.country', priority: '$headers.priority // 4'}
//!       remove-headers: [x-debug]
//! ```
//!
//! The message keeps its id: it is the same message, changed. A jq error, or a payload that
//! is not JSON, makes the message invalid: it goes to the dead letter channel with reason
//! `invalid` and the error, and the route goes on with the next message. Content Filter
//! (`'{id, total}'`, keeping only some fields) and Normalizer (a `choice` in front of one
//! transform per format) are uses of it; the book shows both.

use eip_core::MessageBus;
use eip_core::message::Message;
use eip_steps::expr::Jq;
use eip_steps::translate::Translate;

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::{Check, Problem};
use crate::settings::Settings;
use crate::spec::{Located, SettingValue};

pub(super) static TRANSFORM: StepKind = StepKind {
    name: "transform",
    feature: Some("jq"),
    main: "payload",
    keys: &["payload", "set-headers", "remove-headers"],
    check,
};

/// A checked transform.
#[derive(Debug, Clone)]
pub struct TransformConfig {
    /// The translator.
    pub translate: Translate,
    /// In a few words, for the graph and the dry run.
    described: String,
}

/// The help of an expression that does not compile.
pub(super) const JQ_HELP: &str = "a jq program over the payload (`.`), such as `{id: .id, total: .total}`; \
                       `$headers` holds the headers, `$id` the message id";

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    _entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let before = check.problems.len();
    let mut translate = Translate::builder();
    let mut described = Vec::new();
    if settings.get("payload").is_some() {
        let text = settings.required_text(check, "payload", JQ_HELP)?;
        if let Some(jq) = compile(check, &text, &settings.key("payload")) {
            described.push(text.value.clone());
            translate = translate.payload(jq);
        }
    }
    if let Some(value) = settings.get("set-headers") {
        let SettingValue::Map(items) = &value.value else {
            settings.wrong_type(
                check,
                "set-headers",
                "a mapping of header names to jq programs",
            );
            return None;
        };
        for item in items {
            let key = format!("{}.{}", settings.key("set-headers"), item.key.value);
            let SettingValue::Text(text) = &item.value.value else {
                check.report(
                    Problem::new(
                        format!(
                            "header `{}` must be set by a jq program (a string), found {}",
                            item.key.value,
                            item.value.value.describe()
                        ),
                        item.value.at,
                    )
                    .with_key(key)
                    .with_help("quote it: `'\"fixed text\"'` for a fixed string"),
                );
                continue;
            };
            let text = Located {
                value: text.clone(),
                at: item.value.at,
            };
            if let Some(jq) = compile(check, &text, &key) {
                described.push(format!("{} = {}", item.key.value, text.value));
                translate = translate.set_header(item.key.value.clone(), jq);
            }
        }
    }
    if let Some(names) = settings.list(check, "remove-headers") {
        for name in names {
            described.push(format!("-{}", name.value));
            translate = translate.remove_header(name.value);
        }
    }
    if check.problems.len() > before {
        return None;
    }
    if described.is_empty() {
        settings.report_entry(
            check,
            "the transform changes nothing".to_owned(),
            Some("add `payload:`, `set-headers:` or `remove-headers:`"),
        );
        return None;
    }
    Some(Box::new(TransformConfig {
        translate: translate.build(),
        described: format!("transform {}", described.join(", ")),
    }))
}

/// The jq program `text`, or a problem at the place inside it that is wrong.
pub(super) fn compile(check: &mut Check<'_>, text: &Located<String>, key: &str) -> Option<Jq> {
    match Jq::compile(&text.value) {
        Ok(jq) => Some(jq),
        Err(e) => {
            let at = check.inside(text, e.offset());
            check.report(
                Problem::new(format!("invalid jq: {e}"), at)
                    .with_key(key)
                    .with_help(JQ_HELP),
            );
            None
        }
    }
}

impl StepConfig for TransformConfig {
    fn describe(&self) -> String {
        self.described.clone()
    }

    fn build(&self, _bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        Ok(Box::new(Transform {
            translate: self.translate.clone(),
        }))
    }
}

#[derive(Debug)]
struct Transform {
    translate: Translate,
}

impl RouteStep for Transform {
    fn decide(&self, msg: Message) -> Made {
        // `apply` takes the message; a failure hands back the one the step received.
        match self.translate.apply(msg.clone()) {
            Ok(changed) => Made::next(changed),
            Err(error) => Made::instead(Side::Invalid {
                msg,
                error: error.to_string(),
            }),
        }
    }
}
