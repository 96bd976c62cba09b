//! The flow's namespace: every channel and exchange by name, and the lookups that report an
//! unknown name with the closest declared one.
//!
//! Channels and exchanges share one namespace, as on the bus: a name means one thing, so a
//! route that sends "to `market`" is never ambiguous.

use std::collections::HashMap;

use eip_core::bus::closest;
use eip_core::channel::{ChannelError, ChannelKind, validate_channel_name};

use super::Check;
use crate::diagnostic::Problem;
use crate::plan::{DEAD_LETTERS, TargetRef};
use crate::spec::{FlowSpec, KindSpec, Located, Position};

/// Reports `list[j]` when an earlier entry of the list names the same thing (each `what` — a
/// channel, a target — gets one copy, so a second mention is a mistake); whether it did.
pub(crate) fn listed_twice(
    check: &mut Check<'_>,
    list: &[Located<String>],
    j: usize,
    field: &str,
    key: &str,
    what: &str,
) -> bool {
    let Some(name) = list.get(j) else {
        return false;
    };
    let earlier = list.get(..j).unwrap_or_default();
    let Some(first) = earlier.iter().find(|n| n.value == name.value) else {
        return false;
    };
    check.report(
        Problem::new(
            format!("`{}` is listed twice in `{field}`", name.value),
            name.at,
        )
        .with_key(key)
        .with_label(first.at, "first listed here")
        .with_help(format!("each {what} gets one copy; list it once")),
    );
    true
}

/// What a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entity {
    /// A channel of this kind.
    Channel(ChannelKind),
    /// A topic exchange.
    Exchange,
}

/// Every declared name.
pub(crate) struct Names {
    declared: HashMap<String, (Entity, Option<Position>)>,
    channels: Vec<String>,
    exchanges: Vec<String>,
    /// Whether `dead-letters` was declared (else the plan adds it).
    pub(crate) dead_letters_declared: bool,
}

pub(crate) fn kind_of(kind: KindSpec) -> ChannelKind {
    match kind {
        KindSpec::PointToPoint => ChannelKind::PointToPoint,
        KindSpec::PublishSubscribe => ChannelKind::PublishSubscribe,
    }
}

impl Names {
    /// Declares every channel and exchange of `spec`, reporting invalid and duplicate names.
    pub(crate) fn declare(spec: &FlowSpec, check: &mut Check<'_>) -> Names {
        let mut names = Names {
            declared: HashMap::new(),
            channels: Vec::new(),
            exchanges: Vec::new(),
            dead_letters_declared: false,
        };
        let channels = spec
            .channels
            .iter()
            .map(|(name, c)| (name, Entity::Channel(kind_of(c.kind.value)), "channels"));
        let exchanges = spec
            .exchanges
            .iter()
            .map(|(name, _)| (name, Entity::Exchange, "exchanges"));
        for (name, entity, section) in channels.chain(exchanges) {
            names.declare_one(name, entity, section, check);
        }
        if !names.declared.contains_key(DEAD_LETTERS) {
            names.declared.insert(
                DEAD_LETTERS.to_owned(),
                (Entity::Channel(ChannelKind::PointToPoint), None),
            );
            names.channels.push(DEAD_LETTERS.to_owned());
        }
        names
    }

    fn declare_one(
        &mut self,
        name: &Located<String>,
        entity: Entity,
        section: &str,
        check: &mut Check<'_>,
    ) {
        let key = format!("{section}[{:?}]", name.value);
        let noun = match entity {
            Entity::Channel(_) => "channel",
            Entity::Exchange => "exchange",
        };
        if let Err(ChannelError::InvalidName { reason, .. }) = validate_channel_name(&name.value) {
            check.report(
                Problem::new(
                    format!("invalid {noun} name `{}`: {reason}", name.value),
                    name.at,
                )
                .with_key(key.as_str())
                .with_help("a name is dot-separated words, such as `trades.nyse`"),
            );
        }
        if name.value == DEAD_LETTERS {
            match entity {
                Entity::Channel(ChannelKind::PointToPoint) => self.dead_letters_declared = true,
                Entity::Channel(ChannelKind::PublishSubscribe) => check.report(
                    Problem::new(
                        format!("`{DEAD_LETTERS}` is the flow's dead letter channel: it must be point-to-point"),
                        name.at,
                    )
                    .with_key(key.as_str())
                    .with_help("declare it with `kind: point-to-point`, or leave it out: every flow has it"),
                ),
                Entity::Exchange => check.report(
                    Problem::new(
                        format!("`{DEAD_LETTERS}` is the name of the flow's dead letter channel; an exchange can not have it"),
                        name.at,
                    )
                    .with_key(key.as_str())
                    .with_help("rename the exchange"),
                ),
            }
        }
        if let Some((first, first_at)) = self.declared.get(&name.value) {
            // The problem goes to whichever of the two comes later in the file.
            let (at, other) = match (name.at, *first_at) {
                (Some(a), Some(b)) if a.offset < b.offset => (Some(b), Some(a)),
                (a, b) => (a, b),
            };
            let message = match (first, entity) {
                (Entity::Channel(_), Entity::Channel(_)) => {
                    format!("channel `{}` is declared twice", name.value)
                }
                (Entity::Exchange, Entity::Exchange) => {
                    format!("exchange `{}` is declared twice", name.value)
                }
                _ => format!(
                    "`{}` is declared as a channel and as an exchange",
                    name.value
                ),
            };
            let help = if matches!((first, entity), (Entity::Exchange, Entity::Exchange))
                || matches!((first, entity), (Entity::Channel(_), Entity::Channel(_)))
            {
                "remove or rename one of them"
            } else {
                "channels and exchanges share one namespace, so that a name means one thing; rename one of them"
            };
            check.report(
                Problem::new(message, at)
                    .with_key(key.as_str())
                    .with_label(other, "first declared here")
                    .with_help(help),
            );
            return;
        }
        self.declared.insert(name.value.clone(), (entity, name.at));
        match entity {
            Entity::Channel(_) => self.channels.push(name.value.clone()),
            Entity::Exchange => self.exchanges.push(name.value.clone()),
        }
    }

    /// What `name` is, if declared.
    pub(crate) fn get(&self, name: &str) -> Option<Entity> {
        self.declared.get(name).map(|(entity, _)| *entity)
    }

    /// Whether a reference to `name` should go unreported: the reading step lost its
    /// declaration.
    fn excused(name: &str, check: &Check<'_>) -> bool {
        check.damage.all_names || check.damage.names.contains(name)
    }

    /// The kind of the channel `name`, where only a channel will do (`field` is the key, for
    /// the message); a problem when it is unknown or an exchange.
    pub(crate) fn channel(
        &self,
        check: &mut Check<'_>,
        name: &Located<String>,
        field: &str,
        key: &str,
    ) -> Option<ChannelKind> {
        match self.get(&name.value) {
            Some(Entity::Channel(kind)) => Some(kind),
            Some(Entity::Exchange) => {
                check.report(
                    Problem::new(
                        format!(
                            "`{field}` must name a channel, and `{}` is an exchange",
                            name.value
                        ),
                        name.at,
                    )
                    .with_key(key)
                    .with_help(
                        "exchanges route what is published to them; routes, joins, taps, \
                         bindings and dead letters take channels",
                    ),
                );
                None
            }
            None if Self::excused(&name.value, check) => None,
            None => {
                let help = match closest(&name.value, self.channels.iter().map(String::as_str)) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!(
                        "declare it under `channels:`, e.g. `{}: {{kind: point-to-point}}`",
                        name.value
                    ),
                };
                check.report(
                    Problem::new(format!("unknown channel `{}`", name.value), name.at)
                        .with_key(key)
                        .with_help(help),
                );
                None
            }
        }
    }

    /// A channel or exchange `name`, where either will do.
    pub(crate) fn target(
        &self,
        check: &mut Check<'_>,
        name: &Located<String>,
        key: &str,
    ) -> Option<TargetRef> {
        match self.get(&name.value) {
            Some(Entity::Channel(_)) => Some(TargetRef::Channel(name.value.clone())),
            Some(Entity::Exchange) => Some(TargetRef::Exchange(name.value.clone())),
            None if Self::excused(&name.value, check) => None,
            None => {
                let all = self.channels.iter().chain(&self.exchanges);
                let help = match closest(&name.value, all.map(String::as_str)) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => "declare it under `channels:` or `exchanges:`".to_owned(),
                };
                check.report(
                    Problem::new(
                        format!("unknown channel or exchange `{}`", name.value),
                        name.at,
                    )
                    .with_key(key)
                    .with_help(help),
                );
                None
            }
        }
    }
}
