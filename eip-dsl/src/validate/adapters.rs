//! `adapters:` and `bridges:`: every entry's name, kind and channel checked, its settings
//! handed to its [kind](crate::kind) to check, and an outbound one's consumer settings
//! (`concurrency`, `rate-limit`, `timeout`, `redelivery`) read the same way for every kind.
//!
//! A value of the wrong type, a duration, size, address, glob, URL or name template that does
//! not parse is reported at its position. Environment variables (`bearer-token-env`,
//! `password-env`, `${NAME}` in a URL) are read when the adapter starts, not here: a flow
//! validates on a machine without its secrets.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::names::Names;
use crate::diagnostic::{Check, Problem, name_path, suggest_key};
use crate::kind::{self, Entry};
use crate::plan::adapter::{AdapterPlan, OutboundPlan};
use crate::settings::{Settings, redelivery};
use crate::spec::{AdapterKind, AdapterSpec, FlowSpec};

/// The keys of `rate-limit:`.
const RATE: &[&str] = &["requests", "per"];

/// Checks every adapter of `spec`.
pub(crate) fn check(
    spec: &FlowSpec,
    names: &Names,
    base_dir: &Path,
    check: &mut Check<'_>,
) -> Vec<AdapterPlan> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut plans = Vec::new();
    let sections = [
        (
            "adapters",
            "adapter",
            &spec.adapters,
            &check.damage.adapters,
        ),
        ("bridges", "bridge", &spec.bridges, &check.damage.bridges),
    ];
    for (section, noun, entries, damaged) in sections {
        for (i, (name, adapter)) in entries.iter().enumerate() {
            let key = name_path(section, &name.value);
            if !seen.insert(name.value.as_str()) {
                check.report(
                    Problem::new(
                        format!(
                            "{noun} `{}`: the name is taken by another adapter or bridge",
                            name.value
                        ),
                        name.at,
                    )
                    .with_key(key.as_str())
                    .with_help("give each adapter and bridge its own name"),
                );
                continue;
            }
            if names.get(&name.value).is_some() {
                check.report(
                    Problem::new(
                        format!(
                            "{noun} `{}` has the name of a channel or exchange",
                            name.value
                        ),
                        name.at,
                    )
                    .with_key(key.as_str())
                    .with_help(
                        "`eip route` input names a channel, an exchange or an inbound adapter in \
                         `to`: give it a name of its own",
                    ),
                );
            }
            let damaged = damaged.contains(&i);
            let entry = Declared {
                section,
                noun,
                name: &name.value,
            };
            if let Some(plan) = check_adapter(check, names, base_dir, entry, adapter, damaged) {
                plans.push(plan);
            }
        }
    }
    plans
}

/// Where an adapter or bridge is declared, for messages.
#[derive(Clone, Copy)]
struct Declared<'a> {
    section: &'static str,
    noun: &'static str,
    name: &'a str,
}

fn check_adapter(
    check: &mut Check<'_>,
    names: &Names,
    base_dir: &Path,
    entry: Declared<'_>,
    spec: &AdapterSpec,
    damaged: bool,
) -> Option<AdapterPlan> {
    let name = entry.name;
    let path = name_path(entry.section, name);
    let kind = known_kind(check, entry, spec, &path)?;
    if kind.is_bridge() != (entry.section == "bridges") {
        let (here, there) = if kind.is_bridge() {
            ("a messaging bridge", "bridges")
        } else {
            ("a channel adapter", "adapters")
        };
        check.report(
            Problem::new(
                format!("`{}` is {here}: declare it under `{there}:`", kind.as_str()),
                spec.kind.at,
            )
            .with_key(format!("{path}.kind")),
        );
        return None;
    }
    let settings = Settings {
        path: path.clone(),
        at: spec.at,
        what: format!("`{}` {} `{name}`", kind.as_str(), entry.noun),
        items: &spec.settings,
        damaged,
    };
    let before = check.problems.len();
    settings.check_keys(check, &kind::keys(kind));
    let channel_key = if kind.is_inbound() { "to" } else { "from" };
    if !spec.channel.value.is_empty() {
        names.channel(
            check,
            &spec.channel,
            channel_key,
            &format!("{path}.{channel_key}"),
        );
    } else if !damaged {
        // Reading reports a missing channel of a file; this is one made in code.
        check.report(
            Problem::new(format!("{} has no `{channel_key}`", settings.what), spec.at)
                .with_key(format!("{path}.{channel_key}"))
                .with_help(format!("add `{channel_key}: CHANNEL`")),
        );
    }
    let config =
        kind::of(kind).and_then(|k| (k.check)(check, &settings, &Entry { name, base_dir }));
    let outbound = if kind.is_inbound() {
        OutboundPlan::default()
    } else {
        outbound(check, &settings, spec)
    };
    if check.problems.len() > before {
        return None;
    }
    Some(AdapterPlan {
        name: name.to_owned(),
        channel: spec.channel.value.clone(),
        kind,
        config: Arc::from(config?),
        outbound,
    })
}

/// The kind `spec` names, or a problem: one this `eip` was built without, or none at all (a
/// flow made in code; reading reports a file's).
fn known_kind(
    check: &mut Check<'_>,
    entry: Declared<'_>,
    spec: &AdapterSpec,
    path: &str,
) -> Option<AdapterKind> {
    let written = &spec.kind;
    if let Some(kind) = kind::named(&written.value) {
        return Some(kind.id);
    }
    let key = format!("{path}.kind");
    let problem = kind::not_built(&written.value, written.at, &key).unwrap_or_else(|| {
        let names: Vec<&str> = kind::choices(entry.section == "bridges")
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        Problem::new(format!("`kind` can not be `{}`", written.value), written.at)
            .with_key(key)
            .with_help(suggest_key(&written.value, &names))
    });
    check.report(problem);
    None
}

fn outbound(check: &mut Check<'_>, settings: &Settings<'_>, spec: &AdapterSpec) -> OutboundPlan {
    let concurrency = settings
        .whole(check, "concurrency", 1)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let rate_limit = settings.map(check, "rate-limit", RATE).and_then(|rate| {
        let requests = rate.required_whole(check, "requests", 1, "add `requests: N`")?;
        let per = rate.required_duration(check, "per", "add `per: 1s`")?;
        if per.is_zero() {
            rate.report_at(check, "per", "`per` must be longer than zero", None);
            return None;
        }
        Some((requests, per))
    });
    let timeout = settings.duration(check, "timeout");
    let redelivery = spec
        .redelivery
        .as_ref()
        .and_then(|r| redelivery(check, r, &format!("{}.redelivery", settings.path)));
    OutboundPlan {
        concurrency,
        rate_limit,
        timeout,
        redelivery,
    }
}
