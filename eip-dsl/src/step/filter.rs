//! `filter`: the Message Filter. A message that matches the predicate goes on; one that does
//! not is held back: sent to the `discard` channel if the step has one, else dropped and
//! counted in the route's `filtered`.
//!
//! ```yaml
//! steps:
//!   - filter: '$.total > 0'
//!   - filter: {when: 'header("region") == "eu"', discard: elsewhere}
//! ```
//!
//! A route's `filter:` and `discard:` keys are this step written short, after the route's
//! `wire-tap:` if it has one.

use eip_core::MessageBus;
use eip_core::channel::Channel;
use eip_core::message::Message;
use eip_core::predicate::Predicate;

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::{CompileError, bus_channel};
use crate::diagnostic::Check;
use crate::settings::Settings;

pub(super) static FILTER: StepKind = StepKind {
    name: "filter",
    feature: None,
    main: "when",
    keys: &["when", "discard"],
    check,
};

/// A checked filter.
#[derive(Debug, Clone)]
pub struct FilterConfig {
    /// The predicate a message must match to go on.
    pub predicate: Predicate,
    /// The predicate as written.
    pub text: String,
    /// Where a message that does not match goes; without one it is dropped.
    pub discard: Option<String>,
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let text = settings.required_text(
        check,
        "when",
        "add `when: PREDICATE`, such as `$.total > 0`",
    )?;
    let predicate = check.predicate(&text, &settings.key("when"));
    let discard = match settings.get("discard") {
        Some(_) => Some(entry.channel(check, settings, "discard")?),
        None => None,
    };
    Some(Box::new(FilterConfig {
        predicate: predicate?,
        text: text.value,
        discard,
    }))
}

impl StepConfig for FilterConfig {
    fn describe(&self) -> String {
        format!("filter {}", self.text)
    }

    /// The predicate as eip reads it back, so a graph shows what the filter checks.
    fn label(&self) -> Option<String> {
        Some(format!("filter {}", self.predicate))
    }

    fn channels(&self) -> Vec<(&str, &'static str)> {
        self.discard
            .as_deref()
            .map(|d| (d, "discard"))
            .into_iter()
            .collect()
    }

    fn build(&self, bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let discard = self
            .discard
            .as_deref()
            .map(|name| bus_channel(bus, name))
            .transpose()?;
        Ok(Box::new(Filter {
            predicate: self.predicate.clone(),
            discard,
        }))
    }
}

#[derive(Debug)]
struct Filter {
    predicate: Predicate,
    discard: Option<Channel>,
}

impl RouteStep for Filter {
    fn decide(&self, msg: Message) -> Made {
        if self.predicate.matches(&msg) {
            return Made::next(msg);
        }
        Made::instead(Side::Filtered {
            discard: self.discard.clone(),
            msg,
        })
    }
}
