//! `routing-slip`: the Routing Slip. Each message names, in a header, which of the step's named
//! steps it goes through, and in what order.
//!
//! ```yaml
//! steps:
//!   - routing-slip:
//!       header: slip
//!       steps:
//!         price: {transform: '. + {total: (.qty * .price)}'}
//!         audit: {wire-tap: orders.audit}
//!         slow: {delay: 1s}
//! ```
//!
//! A message with `slip: price, audit` is priced, then tapped; one with `slip: audit` only
//! tapped. The header is read once, as the message enters the step: comma-separated names,
//! spaces around them ignored, a name listed twice run twice. Each named step is one step
//! written as under `steps:` (`{KIND: VALUE}`) and checked as one, so every kind may be in a
//! slip but a routing slip itself. A message without the header, or with an empty one, goes
//! through none of them and on unchanged.
//!
//! A name the step does not declare, or a header that is not text, makes the message invalid:
//! it goes to the dead letter channel with reason `invalid` and the names it could have used
//! (the slip is part of the message, and it is wrong), and the route goes on with the next.
//! What a named step makes of a message is what it would make of it in the route: a split's
//! parts each go through the rest of the slip, a filter's held-back message goes no further,
//! a delay waits.

use std::fmt;

use eip_core::MessageBus;
use eip_core::message::{HeaderValue, Message};
use futures::future::BoxFuture;
use tower::BoxError;

use super::{Entry, Made, RouteStep, Side, StepConfig, StepKind};
use crate::compile::CompileError;
use crate::diagnostic::{Check, Problem, suggest_key};
use crate::settings::Settings;
use crate::spec::SettingValue;

pub(super) static ROUTING_SLIP: StepKind = StepKind {
    name: "routing-slip",
    feature: None,
    main: "header",
    keys: &["header", "steps"],
    check,
};

/// A checked routing slip.
#[derive(Debug)]
pub struct RoutingSlipConfig {
    /// The header that names the steps.
    pub header: String,
    /// The named steps, in the order declared.
    steps: Vec<(String, Box<dyn StepConfig>)>,
}

impl RoutingSlipConfig {
    /// The names of the steps a slip may list, in the order declared.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().map(|(name, _)| name.as_str())
    }
}

fn check(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
) -> Option<Box<dyn StepConfig>> {
    let header = settings.required_text(
        check,
        "header",
        "add `header: NAME`, the header whose comma-separated names say which steps a message \
         goes through",
    );
    let Some(value) = settings.get("steps") else {
        settings.missing(
            check,
            "steps",
            "add `steps:`, a mapping of names to steps, such as `steps: {price: {transform: \
             '.price'}}`",
        );
        return None;
    };
    let SettingValue::Map(named) = &value.value else {
        settings.wrong_type(check, "steps", "a mapping of names to steps");
        return None;
    };
    let before = check.problems.len();
    if named.is_empty() {
        settings.report_at(
            check,
            "steps",
            "the routing slip names no step",
            Some("add one: `steps: {audit: {wire-tap: orders.audit}}`"),
        );
    }
    let mut steps = Vec::new();
    for item in named {
        let name = &item.key.value;
        let key = format!("{}.{name}", settings.key("steps"));
        if name.contains(',') || name.trim() != name || name.is_empty() {
            check.report(
                Problem::new(
                    format!("`{name}` can not be listed in a slip: names are comma-separated"),
                    item.key.at,
                )
                .with_key(key.clone())
                .with_help("name the step with letters, digits, `-` or `_`"),
            );
            continue;
        }
        if let Some(config) = inner(check, settings, entry, item, &key) {
            steps.push((name.clone(), config));
        }
    }
    let header = header?;
    (check.problems.len() == before).then(|| {
        Box::new(RoutingSlipConfig {
            header: header.value,
            steps,
        }) as Box<dyn StepConfig>
    })
}

/// The kinds that wrap the rest of their route (they learn what became of each message and
/// keep state across messages): a slip that runs them for some messages only can not.
const WRAPS: &[&str] = &["dedupe", "aggregate", "resequence"];

/// One named step: a mapping of one key, its kind, checked by that kind.
fn inner(
    check: &mut Check<'_>,
    settings: &Settings<'_>,
    entry: &Entry<'_>,
    item: &crate::spec::Setting,
    key: &str,
) -> Option<Box<dyn StepConfig>> {
    let name = &item.key.value;
    let form = "write the step as under `steps:`, one kind and its value: `{transform: '.x'}`";
    let kinds = match &item.value.value {
        SettingValue::Map(kinds) => kinds.as_slice(),
        other => {
            check.report(
                Problem::new(
                    format!(
                        "step `{name}` must be a mapping of its kind, found {}",
                        other.describe()
                    ),
                    item.value.at,
                )
                .with_key(key)
                .with_help(form),
            );
            return None;
        }
    };
    let [written] = kinds else {
        check.report(
            Problem::new(
                format!("step `{name}` must have exactly one kind"),
                item.value.at.or(item.key.at),
            )
            .with_key(key)
            .with_help(form),
        );
        return None;
    };
    let kind_name = written.key.value.as_str();
    let key = format!("{key}.{kind_name}");
    let kind = match super::named(kind_name) {
        Some(kind) if WRAPS.contains(&kind.name) => {
            check.report(
                Problem::new(
                    format!(
                        "a routing slip's step can not be `{kind_name}`: it keeps state across \
                         messages and must see every one that passes"
                    ),
                    written.key.at,
                )
                .with_key(key)
                .with_help(format!(
                    "put the `{kind_name}` step in the route's `steps:`"
                )),
            );
            return None;
        }
        Some(kind) if kind.name != ROUTING_SLIP.name => kind,
        Some(_) => {
            check.report(
                Problem::new(
                    "a routing slip's step can not be a routing slip",
                    written.key.at,
                )
                .with_key(key)
                .with_help("list the inner slip's steps in this one"),
            );
            return None;
        }
        None => {
            let problem = super::not_built(kind_name, written.key.at, &key).unwrap_or_else(|| {
                Problem::new(format!("unknown step `{kind_name}`"), written.key.at)
                    .with_key(key.clone())
                    .with_help(suggest_key(kind_name, &super::names()))
            });
            check.report(problem);
            return None;
        }
    };
    let items = super::settings_of(kind, &written.value);
    let inner = Settings {
        path: key,
        at: written.key.at,
        what: format!(
            "step `{name}` of the routing slip in route `{}`",
            entry.route
        ),
        items: &items,
        damaged: settings.damaged,
    };
    // A slip's step has no `on-error` of its own: the slip's route decides.
    let keys: Vec<&str> = kind
        .keys
        .iter()
        .copied()
        .filter(|k| *k != "on-error")
        .collect();
    inner.check_keys(check, &keys);
    (kind.check)(check, &inner, entry)
}

impl StepConfig for RoutingSlipConfig {
    fn describe(&self) -> String {
        let names: Vec<&str> = self.names().collect();
        format!("routing-slip {} of {}", self.header, names.join(", "))
    }

    fn channels(&self) -> Vec<(&str, &'static str)> {
        self.steps
            .iter()
            .flat_map(|(_, config)| config.channels())
            .collect()
    }

    fn build(&self, bus: &MessageBus) -> Result<Box<dyn RouteStep>, CompileError> {
        let steps = self
            .steps
            .iter()
            .map(|(name, config)| Ok((name.clone(), config.build(bus)?)))
            .collect::<Result<Vec<_>, CompileError>>()?;
        let calls_out = steps.iter().any(|(_, step)| step.calls_out());
        Ok(Box::new(RoutingSlip {
            header: self.header.clone(),
            steps,
            calls_out,
        }))
    }
}

struct RoutingSlip {
    header: String,
    steps: Vec<(String, Box<dyn RouteStep>)>,
    calls_out: bool,
}

impl fmt::Debug for RoutingSlip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.steps.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("RoutingSlip")
            .field("header", &self.header)
            .field("steps", &names)
            .finish()
    }
}

impl RoutingSlip {
    /// The steps `msg`'s slip lists, in order; else why the slip can not be followed.
    fn slip(&self, msg: &Message) -> Result<Vec<&dyn RouteStep>, String> {
        let text = match msg.headers().get(&self.header) {
            None => return Ok(Vec::new()),
            Some(HeaderValue::Str(text)) => text.as_str(),
            Some(other) => {
                return Err(format!(
                    "routing slip header `{}` holds a value of type {}, not comma-separated names",
                    self.header,
                    other.type_name()
                ));
            }
        };
        let mut steps = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match self.steps.iter().find(|(n, _)| n == name) {
                Some((_, step)) => steps.push(step.as_ref()),
                None => {
                    let known: Vec<&str> = self.steps.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(format!(
                        "routing slip `{}` names `{name}`, which is not one of its steps ({})",
                        self.header,
                        known.join(", ")
                    ));
                }
            }
        }
        Ok(steps)
    }
}

impl RouteStep for RoutingSlip {
    fn decide(&self, msg: Message) -> Made {
        let slip = match self.slip(&msg) {
            Ok(slip) => slip,
            Err(error) => return Made::instead(Side::Invalid { msg, error }),
        };
        let mut made = Made::next(msg);
        for step in slip {
            let current = std::mem::take(&mut made.next);
            for msg in current {
                let one = step.decide(msg);
                made.side.extend(one.side);
                made.next.extend(one.next);
            }
        }
        made
    }

    fn calls_out(&self) -> bool {
        self.calls_out
    }

    fn call(&self, msg: Message) -> BoxFuture<'_, Result<Made, BoxError>> {
        Box::pin(async move {
            let slip = match self.slip(&msg) {
                Ok(slip) => slip,
                Err(error) => return Ok(Made::instead(Side::Invalid { msg, error })),
            };
            let mut made = Made::next(msg);
            for step in slip {
                let current = std::mem::take(&mut made.next);
                for msg in current {
                    let one = match step.calls_out() {
                        true => step.call(msg).await?,
                        false => step.decide(msg),
                    };
                    made.side.extend(one.side);
                    made.next.extend(one.next);
                }
            }
            Ok(made)
        })
    }
}
