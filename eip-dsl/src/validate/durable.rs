//! Guaranteed Delivery: which channels are durable, and the `store:` that keeps them.
//!
//! A channel is durable when it says `durable: true`. What a durable channel can not deliver
//! must survive a crash as the channel's own messages do, so its dead letter channel (the
//! flow's `dead-letters` unless it names another) and its invalid message channel are durable
//! too, and so on along the chain: the plan marks them durable. A channel written
//! `durable: false` that this rule would make durable is a problem, not silently overridden.
//!
//! `store:` is checked whether or not any channel is durable: a flow with no durable channel
//! keeps its (valid) `store:` unused, with no warning.

use std::path::Path;

use super::Check;
use crate::diagnostic::Problem;
use crate::plan::{ChannelPlan, DEAD_LETTERS, StorePlan};
use crate::settings::parse_byte_size;
use crate::spec::FlowSpec;

/// Checks `store:`; a relative `path` is joined to `base_dir`.
pub(crate) fn store(spec: &FlowSpec, base_dir: &Path, check: &mut Check<'_>) -> StorePlan {
    let Some(store) = &spec.store else {
        return StorePlan::default();
    };
    let path = store.path.as_ref().and_then(|path| {
        let problem = if path.value.is_empty() {
            "`path` of `store` is empty"
        } else if path.value.contains('\0') {
            "`path` of `store` holds a NUL character"
        } else {
            return Some(base_dir.join(&path.value));
        };
        check.report(
            Problem::new(problem, path.at)
                .with_key("store.path")
                .with_help(
                    "the data directory, relative to the flow file's directory; leave `path` \
                     out for `eip run`'s default",
                ),
        );
        None
    });
    let max_bytes = store
        .max_bytes
        .as_ref()
        .and_then(|size| match parse_byte_size(&size.value) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                check.report(
                    Problem::new(format!("invalid `max-bytes`: {e}"), size.at)
                        .with_key("store.max-bytes")
                        .with_help(e.help()),
                );
                None
            }
        });
    StorePlan { path, max_bytes }
}

/// Makes the dead letter and invalid message channels of every durable channel durable, along
/// the whole chain; reports those written `durable: false`.
pub(crate) fn propagate(spec: &FlowSpec, plans: &mut [ChannelPlan], check: &mut Check<'_>) {
    let mut durable: Vec<usize> = (0..plans.len()).filter(|&i| plans[i].durable).collect();
    while let Some(owner) = durable.pop() {
        let owner = &plans[owner];
        let owner_name = owner.name.clone();
        let dead_letter = owner
            .dead_letter
            .as_deref()
            .unwrap_or(DEAD_LETTERS)
            .to_owned();
        let invalid = owner.datatype.as_ref().map(|d| d.invalid.clone());
        for (target, role) in [
            (Some(dead_letter), "dead letter channel"),
            (invalid, "invalid message channel"),
        ] {
            let Some(i) = target.and_then(|t| plans.iter().position(|p| p.name == t)) else {
                continue;
            };
            if plans[i].durable {
                continue;
            }
            refuse_not_durable(spec, &plans[i].name, &owner_name, role, check);
            plans[i].durable = true;
            durable.push(i);
        }
    }
}

/// The problem of a channel written `durable: false` that serves a durable one as `role`.
fn refuse_not_durable(spec: &FlowSpec, name: &str, owner: &str, role: &str, check: &mut Check<'_>) {
    let written = spec
        .channels
        .iter()
        .filter(|(n, _)| n.value == name)
        .find_map(|(_, c)| c.durable.as_ref().filter(|d| !d.value));
    if let Some(written) = written {
        check.report(
            Problem::new(
                format!(
                    "channel `{name}` is `durable: false`, but it is the {role} of the durable \
                     channel `{owner}`"
                ),
                written.at,
            )
            .with_key(format!("channels[{name:?}].durable"))
            .with_help(format!(
                "what a durable channel can not deliver is kept on disk too: remove \
                 `durable: false`, or give `{owner}` another {role}"
            )),
        );
    }
}
