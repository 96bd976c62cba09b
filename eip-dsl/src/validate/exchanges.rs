//! Exchanges: the alternate channel and the bindings (topic pattern and target channels).

use eip_core::topic::{TopicError, TopicPattern};

use super::Check;
use super::names::{Names, listed_twice};
use crate::diagnostic::Problem;
use crate::diagnostic::inside;
use crate::plan::{BindingPlan, ExchangePlan};
use crate::spec::{ExchangeSpec, FlowSpec, Located};

/// Checks every exchange; the plan's exchanges in the order declared.
pub(crate) fn check(spec: &FlowSpec, names: &Names, check: &mut Check<'_>) -> Vec<ExchangePlan> {
    let mut plans: Vec<ExchangePlan> = Vec::new();
    for (i, (name, exchange)) in spec.exchanges.iter().enumerate() {
        let key = format!("exchanges[{:?}]", name.value);
        let plan = check_exchange(&name.value, exchange, i, &key, names, check);
        if !plans.iter().any(|p| p.name == plan.name) {
            plans.push(plan);
        }
    }
    plans
}

fn check_exchange(
    name: &str,
    exchange: &ExchangeSpec,
    index: usize,
    key: &str,
    names: &Names,
    check: &mut Check<'_>,
) -> ExchangePlan {
    let whole = !check.damage.exchanges.contains(&index);
    let alternate = exchange.alternate.as_ref().and_then(|a| {
        names.channel(check, a, "alternate", &format!("{key}.alternate"))?;
        Some(a.value.clone())
    });
    let mut bindings = Vec::new();
    for (j, binding) in exchange.bindings.iter().enumerate() {
        let key = format!("{key}.bindings[{j}]");
        let pattern = match &binding.key {
            Some(k) => match TopicPattern::parse(&k.value) {
                Ok(p) => Some(Some(p)),
                Err(e) => {
                    report_pattern(check, k, &e, &format!("{key}.key"));
                    None
                }
            },
            None => Some(None),
        };
        let to_key = format!("{key}.to");
        if binding.to.value.is_empty() && whole {
            check.report(
                Problem::new(
                    format!("binding {} of exchange `{name}` sends nowhere", j + 1),
                    binding.to.at,
                )
                .with_key(to_key.as_str())
                .with_help("name at least one channel in `to`"),
            );
        }
        let mut to: Vec<String> = Vec::new();
        let mut complete = true;
        for (t, target) in binding.to.value.iter().enumerate() {
            let key = format!("{to_key}[{t}]");
            if listed_twice(check, &binding.to.value, t, "to", &key, "channel") {
                complete = false;
                continue;
            }
            match names.channel(check, target, "to", &key) {
                Some(_) => to.push(target.value.clone()),
                None => complete = false,
            }
        }
        if let (Some(key), true, false) = (pattern, complete, to.is_empty()) {
            bindings.push(BindingPlan { key, to });
        }
    }
    ExchangePlan {
        name: name.to_owned(),
        alternate,
        bindings,
    }
}

/// A topic pattern that does not parse, pointing at the word at fault.
fn report_pattern(check: &mut Check<'_>, key: &Located<String>, e: &TopicError, path: &str) {
    let at = match e {
        TopicError::MixedWildcard { word_index, .. } => {
            let offset: usize = key
                .value
                .split('.')
                .take(word_index.saturating_sub(1))
                .map(|w| w.len() + 1)
                .sum();
            let word = key.value.split('.').nth(word_index.saturating_sub(1));
            // The marker covers the whole word.
            inside(key, offset, check.source).map(|mut at| {
                at.len = at.len.max(word.map_or(0, str::len));
                at
            })
        }
        _ => key.at,
    };
    check.report(Problem::new(e.to_string(), at).with_key(path).with_help(
        "a pattern is dot-separated words; `*` stands for exactly one word and `#` for \
                 zero or more, each as a whole word: `stock.*.nyse`, `stock.#`",
    ));
}
