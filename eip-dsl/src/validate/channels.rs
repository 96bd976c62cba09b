//! Channels: kinds, capacities, datatypes (JSON Schema files) with their invalid message
//! channels, dead letter channels, time-to-live, redelivery and overflow.

use std::path::Path;

use eip_core::channel::{ChannelKind, JsonSchema, Overflow};

use super::Check;
use super::names::{Names, kind_of};
use crate::diagnostic::Problem;
use crate::plan::{ChannelPlan, DEAD_LETTERS, DatatypePlan};
use crate::settings::{duration, redelivery};
use crate::spec::{ChannelSpec, FlowSpec, Located, OverflowSpec};

/// The largest schema file read, in bytes.
const MAX_SCHEMA_BYTES: u64 = 4 * 1024 * 1024;

/// Checks every channel; the plan's channels in the order declared, `dead-letters` last when
/// the flow does not declare it.
pub(crate) fn check(
    spec: &FlowSpec,
    names: &Names,
    base_dir: &Path,
    check: &mut Check<'_>,
) -> Vec<ChannelPlan> {
    let mut plans: Vec<ChannelPlan> = Vec::new();
    for (i, (name, channel)) in spec.channels.iter().enumerate() {
        let key = format!("channels[{:?}]", name.value);
        let plan = check_channel(&name.value, channel, names, base_dir, &key, i, check);
        if !plans.iter().any(|p| p.name == plan.name) {
            plans.push(plan);
        }
    }
    if !names.dead_letters_declared && !plans.iter().any(|p| p.name == DEAD_LETTERS) {
        plans.push(ChannelPlan {
            name: DEAD_LETTERS.to_owned(),
            kind: ChannelKind::PointToPoint,
            capacity: None,
            datatype: None,
            dead_letter: None,
            time_to_live: None,
            redelivery: None,
            overflow: None,
            durable: false,
            broker: None,
        });
    }
    plans
}

fn check_channel(
    name: &str,
    channel: &ChannelSpec,
    names: &Names,
    base_dir: &Path,
    key: &str,
    index: usize,
    check: &mut Check<'_>,
) -> ChannelPlan {
    let kind = kind_of(channel.kind.value);
    let this = Channel {
        name,
        channel,
        key,
        whole: !check.damage.channels.contains(&index),
    };
    let capacity = this.capacity(check);
    let datatype = this.datatype(check, names, base_dir);
    let dead_letter = channel.dead_letter.as_ref().and_then(|dead| {
        queue_for(
            check,
            names,
            name,
            dead,
            "dead-letter",
            &this.field("dead-letter"),
        )
    });
    let time_to_live = this.time_to_live(check);
    let redelivery = channel
        .redelivery
        .as_ref()
        .and_then(|r| redelivery(check, r, &this.field("redelivery")));
    let overflow = this.overflow(check, kind);
    let broker = super::channel_store::check_store(check, name, kind, overflow, channel, key);

    ChannelPlan {
        name: name.to_owned(),
        kind,
        capacity,
        datatype,
        dead_letter,
        time_to_live,
        redelivery,
        overflow,
        durable: channel.durable.as_ref().is_some_and(|d| d.value),
        broker,
    }
}

/// One channel being checked.
struct Channel<'a> {
    name: &'a str,
    channel: &'a ChannelSpec,
    /// Its key, `channels["NAME"]`.
    key: &'a str,
    /// Whether it was read without damage: only then is a missing key reported (a damaged
    /// entry's missing keys may be the damage).
    whole: bool,
}

impl Channel<'_> {
    fn field(&self, k: &str) -> String {
        format!("{}.{k}", self.key)
    }

    /// `capacity`: at least 1, and one this machine can count.
    fn capacity(&self, check: &mut Check<'_>) -> Option<usize> {
        let c = self.channel.capacity.as_ref()?;
        if c.value == 0 {
            check.report(
                Problem::new("`capacity` must be at least 1, found 0", c.at)
                    .with_key(self.field("capacity"))
                    .with_help("a channel of capacity 0 would never accept a message"),
            );
            return None;
        }
        match usize::try_from(c.value) {
            Ok(n) => Some(n),
            Err(_) => {
                check.report(
                    Problem::new(format!("`capacity` is too large: {}", c.value), c.at)
                        .with_key(self.field("capacity")),
                );
                None
            }
        }
    }

    /// `datatype` with its `invalid` channel: the two come together, the schema file must
    /// load, and `invalid` is another point-to-point channel.
    fn datatype(
        &self,
        check: &mut Check<'_>,
        names: &Names,
        base_dir: &Path,
    ) -> Option<DatatypePlan> {
        let (name, channel) = (self.name, self.channel);
        let invalid = channel.invalid.as_ref().and_then(|invalid| {
            queue_for(
                check,
                names,
                name,
                invalid,
                "invalid",
                &self.field("invalid"),
            )
        });
        let schema = channel
            .datatype
            .as_ref()
            .and_then(|path| load_schema(check, path, base_dir, &self.field("datatype")));
        if self.whole {
            match (&channel.datatype, &channel.invalid) {
                (Some(datatype), None) => check.report(
                    Problem::new(
                        format!("channel `{name}` has a `datatype` but no `invalid` channel"),
                        datatype.at,
                    )
                    .with_key(self.field("datatype"))
                    .with_help(
                        "add `invalid: CHANNEL`, the point-to-point channel that takes the \
                         messages that do not fit the datatype",
                    ),
                ),
                (None, Some(invalid)) => check.report(
                    Problem::new(
                        format!("channel `{name}` has an `invalid` channel but no `datatype`"),
                        invalid.at,
                    )
                    .with_key(self.field("invalid"))
                    .with_help(
                        "add `datatype: SCHEMA-FILE` (a JSON Schema), or remove `invalid`: \
                         without a datatype no message is invalid",
                    ),
                ),
                _ => {}
            }
        }
        match (schema, invalid, &channel.datatype) {
            (Some(schema), Some(invalid), Some(path)) => Some(DatatypePlan {
                path: path.value.clone(),
                schema,
                invalid,
            }),
            _ => None,
        }
    }

    /// `time-to-live`: a duration longer than 0.
    fn time_to_live(&self, check: &mut Check<'_>) -> Option<std::time::Duration> {
        let ttl = self.channel.time_to_live.as_ref()?;
        let d = duration(check, ttl, &self.field("time-to-live"))?;
        if d.is_zero() {
            check.report(
                Problem::new("`time-to-live` must be longer than 0", ttl.at)
                    .with_key(self.field("time-to-live"))
                    .with_help(
                        "every message would expire at once; leave `time-to-live` out for no \
                         expiry",
                    ),
            );
            return None;
        }
        Some(d)
    }

    /// `overflow`: for a publish-subscribe channel only.
    fn overflow(&self, check: &mut Check<'_>, kind: ChannelKind) -> Option<Overflow> {
        let overflow = self.channel.overflow.as_ref()?;
        if kind == ChannelKind::PointToPoint {
            check.report(
                Problem::new(
                    format!(
                        "`overflow` applies to publish-subscribe channels only, and `{}` is \
                         point-to-point",
                        self.name
                    ),
                    overflow.at,
                )
                .with_key(self.field("overflow"))
                .with_help("remove it: the senders of a full queue wait for room"),
            );
            return None;
        }
        Some(match overflow.value {
            OverflowSpec::Backpressure => Overflow::Backpressure,
            OverflowSpec::DropOldest => Overflow::DropOldest,
        })
    }
}

/// The `invalid` or `dead-letter` channel of `owner`: a declared point-to-point channel other
/// than `owner` itself.
fn queue_for(
    check: &mut Check<'_>,
    names: &Names,
    owner: &str,
    target: &Located<String>,
    field: &str,
    key: &str,
) -> Option<String> {
    let kind = names.channel(check, target, field, key)?;
    if kind != ChannelKind::PointToPoint {
        let what = if field == "invalid" {
            "invalid messages"
        } else {
            "dead letters"
        };
        check.report(
            Problem::new(
                format!(
                    "`{field}` must be a point-to-point channel, and `{}` is publish-subscribe",
                    target.value
                ),
                target.at,
            )
            .with_key(key)
            .with_help(format!(
                "{what} are each handled once: declare `{}` with `kind: point-to-point`",
                target.value
            )),
        );
        return None;
    }
    if target.value == owner {
        let (what, fate) = if field == "invalid" {
            (
                "invalid message channel",
                "its invalid messages would be mixed with the valid ones",
            )
        } else {
            (
                "dead letter channel",
                "a message that can not be delivered would be delivered again, forever",
            )
        };
        check.report(
            Problem::new(format!("channel `{owner}` is its own {what}"), target.at)
                .with_key(key)
                .with_help(format!("{fate}; name another point-to-point channel")),
        );
        return None;
    }
    Some(target.value.clone())
}

/// Reads and compiles the JSON Schema at `path` (relative to `base_dir`).
fn load_schema(
    check: &mut Check<'_>,
    path: &Located<String>,
    base_dir: &Path,
    key: &str,
) -> Option<serde_json::Value> {
    let file = base_dir.join(&path.value);
    let tried = file.display();
    let problem = |message: String| Problem::new(message, path.at).with_key(key);
    let text = match crate::text_file::read_text_file(&file, MAX_SCHEMA_BYTES) {
        Ok(text) => text,
        Err(e) => {
            check.report(
                problem(format!(
                    "can not read the schema file `{}`: {e}",
                    path.value
                ))
                .with_help(format!(
                    "tried `{tried}`; a datatype's path is relative to the flow file's directory"
                )),
            );
            return None;
        }
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => {
            check.report(
                problem(format!("the schema file `{}` is not JSON", path.value)).with_help(
                    format!("`{tried}`, line {}, column {}: {e}", e.line(), e.column()),
                ),
            );
            return None;
        }
    };
    if let Err(e) = JsonSchema::new(path.value.as_str(), &value) {
        check.report(
            problem(format!(
                "the schema file `{}` is not a valid JSON Schema",
                path.value
            ))
            .with_help(e.to_string()),
        );
        return None;
    }
    Some(value)
}
