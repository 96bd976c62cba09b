//! Joins: every refusal [`JoinBuilder::create`](eip_core::join::JoinBuilder::create) would
//! make, made here with a position, plus the hop count's range.

use eip_core::channel::ChannelKind;
use eip_core::join::{DEFAULT_HOPS, JoinError};

use super::Check;
use super::names::Names;
use crate::diagnostic::Problem;
use crate::plan::JoinPlan;
use crate::spec::{FlowSpec, JoinSpec, Located, Number};

/// Checks every join; the plan's joins in the order declared.
pub(crate) fn check(spec: &FlowSpec, names: &Names, check: &mut Check<'_>) -> Vec<JoinPlan> {
    spec.joins
        .iter()
        .enumerate()
        .filter_map(|(i, join)| check_join(join, &format!("joins[{i}]"), names, check))
        .collect()
}

fn check_join(
    join: &JoinSpec,
    key: &str,
    names: &Names,
    check: &mut Check<'_>,
) -> Option<JoinPlan> {
    let field = |k: &str| format!("{key}.{k}");
    let before = check.problems.len();
    let archival = join.archival.as_ref().is_some_and(|a| a.value);

    let from = names.channel(check, &join.from, "from", &field("from"));
    if from == Some(ChannelKind::PointToPoint) {
        let refusal = JoinError::QueueAsSource {
            channel: join.from.value.clone(),
        };
        check.report(
            Problem::new(refusal.to_string(), join.from.at)
                .with_key(field("from"))
                .with_help(format!(
                    "a queue's messages each go to one consumer; join from a publish-subscribe \
                     channel, or make `{}` one",
                    join.from.value
                )),
        );
    }
    let to = names.channel(check, &join.to, "to", &field("to"));
    if archival && to == Some(ChannelKind::PublishSubscribe) {
        let refusal = JoinError::ArchivalToChannel {
            source_channel: join.from.value.clone(),
            destination: join.to.value.clone(),
        };
        let at = join.archival.as_ref().and_then(|a| a.at);
        check.report(
            Problem::new(refusal.to_string(), join.to.at)
                .with_key(field("to"))
                .with_label(at, "archival")
                .with_help(
                    "an archival join keeps every copy that reaches a queue; join to a \
                     point-to-point channel, or remove `archival: true`",
                ),
        );
    }
    if from.is_some() && to.is_some() && join.from.value == join.to.value {
        check.report(
            Problem::new(
                format!("join from `{}` to itself", join.from.value),
                join.to.at,
            )
            .with_key(field("to"))
            .with_help("a channel never stores a message twice, so this join does nothing"),
        );
    }
    let filter = join
        .filter
        .as_ref()
        .and_then(|f| check.predicate(f, &field("filter")));
    let hops = match &join.hops {
        Some(hops) => hop_count(check, hops, &field("hops")),
        None => Some(DEFAULT_HOPS),
    };
    if check.problems.len() > before {
        return None;
    }
    Some(JoinPlan {
        from: join.from.value.clone(),
        to: join.to.value.clone(),
        filter,
        hops: hops?,
        archival,
    })
}

/// A hop count: a whole number from 0 to `u32::MAX`.
fn hop_count(check: &mut Check<'_>, hops: &Located<Number>, key: &str) -> Option<u32> {
    let problem = |message: String| {
        Problem::new(message, hops.at).with_key(key).with_help(
            "the hop count is how many further joins a message may cross: a whole number from \
             0 (to the destination and no further); the default is 10",
        )
    };
    let refused = match hops.value {
        Number::Integer(n) if n < 0 => format!("`hops` must not be negative, found {n}"),
        Number::Integer(n) => match u32::try_from(n) {
            Ok(n) => return Some(n),
            Err(_) => format!("`hops` must be at most {}, found {n}", u32::MAX),
        },
        Number::Float(f) if !f.is_finite() || f.fract() != 0.0 => {
            format!("`hops` must be a whole number, found {f}")
        }
        Number::Float(f) if f < 0.0 => format!("`hops` must not be negative, found {f}"),
        Number::Float(f) if f > f64::from(u32::MAX) => {
            format!("`hops` must be at most {}, found {f}", u32::MAX)
        }
        // A whole number written with a fraction (`5.0`), in range.
        Number::Float(f) => return Some(f as u32),
    };
    check.report(problem(refused));
    None
}
