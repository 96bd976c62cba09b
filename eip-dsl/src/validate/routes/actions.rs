//! How a route sends: exactly one of `to`, `choice` (with `otherwise`), `recipient-list` or
//! `load-balance`, each target a declared channel or exchange (or, for `to` and a fixed
//! recipient list, a template naming one per message), and never the channel the route
//! consumes.

use eip_core::router::Strategy;
use eip_core::template::{Syntax, has_placeholders};

use super::super::Check;
use super::super::names::{Names, listed_twice};
use super::Route;
use crate::diagnostic::{Problem, suggest_key};
use crate::plan::{ActionPlan, RecipientsPlan, TargetRef};
use crate::spec::{Located, Position, RecipientsSpec};

impl Route<'_> {
    /// Reports a route that sends by none or by several of `to`, `choice` and
    /// `recipient-list`, and an `otherwise` without a `choice`.
    pub(super) fn one_action(&self, name: &str, check: &mut Check<'_>) {
        let route = self.route;
        let actions: Vec<(&str, Option<Position>)> = [
            ("to", route.to.as_ref().map(|t| t.at)),
            ("choice", route.choice.as_ref().map(|c| c.at)),
            (
                "recipient-list",
                route.recipient_list.as_ref().map(|r| r.at),
            ),
            ("load-balance", route.load_balance.as_ref().map(|l| l.at)),
        ]
        .into_iter()
        .filter_map(|(k, at)| at.map(|at| (k, at)))
        .collect();
        match actions.as_slice() {
            [] => check.report(
                Problem::new(
                    format!(
                        "route `{name}` sends nowhere: it needs `to`, `choice`, `recipient-list` or `load-balance`"
                    ),
                    route.at,
                )
                .with_key(self.key)
                .with_help("add `to: CHANNEL`"),
            ),
            [_] => {}
            [(first, _), rest @ ..] => {
                for (other, at) in rest {
                    check.report(
                        Problem::new(
                            format!("route `{name}` has both `{first}` and `{other}`: a route sends by exactly one of them"),
                            *at,
                        )
                        .with_key(self.field(other))
                        .with_help("split it into two routes, or keep one"),
                    );
                }
            }
        }
        if let (Some(otherwise), None) = (&route.otherwise, &route.choice) {
            check.report(
                Problem::new("`otherwise` without `choice`", otherwise.at)
                    .with_key(self.field("otherwise"))
                    .with_help("`otherwise` is where a `choice` sends what no `when` matches; use `to` for a route without a choice"),
            );
        }
    }

    /// `choice`: its `when` clauses, each a predicate and a target, and `otherwise`.
    pub(super) fn choice(&self, check: &mut Check<'_>) -> Option<ActionPlan> {
        let clauses = self.route.choice.as_ref()?;
        if clauses.value.is_empty() && self.whole {
            check.report(
                Problem::new("`choice` has no `when` clause", clauses.at)
                    .with_key(self.field("choice"))
                    .with_help("add `- {when: PREDICATE, to: NAME}`"),
            );
        }
        let when: Vec<_> = clauses
            .value
            .iter()
            .enumerate()
            .filter_map(|(j, clause)| {
                let at = format!("{}.choice[{j}]", self.key);
                let predicate = check.predicate(&clause.when, &format!("{at}.when"));
                let target = target(
                    check,
                    self.names,
                    &clause.to,
                    self.from,
                    &format!("{at}.to"),
                );
                predicate.zip(target)
            })
            .collect();
        let otherwise = self
            .route
            .otherwise
            .as_ref()
            .and_then(|o| target(check, self.names, o, self.from, &self.field("otherwise")));
        Some(ActionPlan::Choice { when, otherwise })
    }

    /// `recipient-list`: a fixed list of targets, or the header that names them per message.
    pub(super) fn recipients(&self, check: &mut Check<'_>) -> Option<RecipientsPlan> {
        let list = self.route.recipient_list.as_ref()?;
        Some(match &list.value {
            RecipientsSpec::Fixed(fixed) => {
                let located = Located {
                    value: fixed.clone(),
                    at: list.at,
                };
                RecipientsPlan::Fixed(targets(
                    check,
                    self.names,
                    &located,
                    self.from,
                    "recipient-list",
                    &self.field("recipient-list"),
                ))
            }
            RecipientsSpec::Header(header) => {
                if header.value.trim().is_empty() {
                    check.report(
                        Problem::new("the recipient list's `header` must not be empty", header.at)
                            .with_key(self.field("recipient-list.header")),
                    );
                }
                RecipientsPlan::Header(header.value.clone())
            }
        })
    }
}

/// The strategies of `load-balance`, by name.
const STRATEGIES: &[(&str, Strategy)] = &[
    ("round-robin", Strategy::RoundRobin),
    ("failover", Strategy::Failover),
];

impl Route<'_> {
    /// `load-balance`: named targets (no template: each message goes to one of a known set),
    /// each once, and the strategy.
    pub(super) fn load_balance(&self, check: &mut Check<'_>) -> Option<ActionPlan> {
        let spec = &self.route.load_balance.as_ref()?.value;
        let key = self.field("load-balance");
        let strategy = match &spec.strategy {
            None => Some(Strategy::RoundRobin),
            Some(text) => match STRATEGIES.iter().find(|(n, _)| *n == text.value) {
                Some((_, strategy)) => Some(*strategy),
                None => {
                    let words: Vec<&str> = STRATEGIES.iter().map(|(n, _)| *n).collect();
                    check.report(
                        Problem::new(format!("`strategy` can not be `{}`", text.value), text.at)
                            .with_key(format!("{key}.strategy"))
                            .with_help(suggest_key(&text.value, &words)),
                    );
                    None
                }
            },
        };
        let list = &spec.to;
        let to_key = format!("{key}.to");
        if list.value.is_empty() {
            check.report(
                Problem::new("`load-balance` names no channel or exchange", list.at)
                    .with_key(to_key.clone())
                    .with_help("name the targets that share the messages"),
            );
        }
        let mut targets = Vec::new();
        for (j, name) in list.value.iter().enumerate() {
            let key = format!("{to_key}[{j}]");
            if listed_twice(check, &list.value, j, "load-balance", &key, "target") {
                continue;
            }
            if has_placeholders(&name.value) {
                check.report(
                    Problem::new(
                        format!(
                            "`{}` is a template, and a load balancer sends to named channels or \
                             exchanges",
                            name.value
                        ),
                        name.at,
                    )
                    .with_key(key)
                    .with_help(
                        "a destination computed per message is for `to` and `recipient-list`",
                    ),
                );
                continue;
            }
            if let Some(target) = self.names.target(check, name, &key)
                && not_back(check, name, self.from, &key).is_some()
            {
                targets.push(target);
            }
        }
        Some(ActionPlan::LoadBalance {
            targets,
            strategy: strategy?,
        })
    }
}

/// A channel (not an exchange) that the route writes to: `discard` or `wire-tap`.
pub(super) fn own_channel(
    check: &mut Check<'_>,
    names: &Names,
    name: &Located<String>,
    from: &str,
    field: &str,
    key: &str,
) -> Option<String> {
    names.channel(check, name, field, key)?;
    not_back(check, name, from, key)?;
    Some(name.value.clone())
}

/// A channel or exchange the route sends to; a template is refused (only `to` and a fixed
/// `recipient-list` take one, see [`targets`]).
fn target(
    check: &mut Check<'_>,
    names: &Names,
    name: &Located<String>,
    from: &str,
    key: &str,
) -> Option<TargetRef> {
    if has_placeholders(&name.value) {
        check.report(
            Problem::new(
                format!(
                    "`{}` is a template, and a `choice` sends to a named channel or exchange",
                    name.value
                ),
                name.at,
            )
            .with_key(key)
            .with_help(
                "computed destinations are for `to` and `recipient-list`: send the `when` to a \
                 channel whose route has `to: TEMPLATE`",
            ),
        );
        return None;
    }
    let target = names.target(check, name, key)?;
    not_back(check, name, from, key)?;
    Some(target)
}

/// A list of targets: at least one, each once.
pub(super) fn targets(
    check: &mut Check<'_>,
    names: &Names,
    list: &Located<Vec<Located<String>>>,
    from: &str,
    field: &str,
    key: &str,
) -> Vec<TargetRef> {
    if list.value.is_empty() {
        check.report(
            Problem::new(format!("`{field}` names no channel or exchange"), list.at)
                .with_key(key)
                .with_help("name at least one"),
        );
    }
    let mut out: Vec<TargetRef> = Vec::new();
    for (j, name) in list.value.iter().enumerate() {
        let key = format!("{key}[{j}]");
        if listed_twice(check, &list.value, j, field, &key, "target") {
            continue;
        }
        let found = match has_placeholders(&name.value) {
            true => template(check, name, &key),
            false => target(check, names, name, from, &key),
        };
        if let Some(t) = found {
            out.push(t);
        }
    }
    out
}

/// A destination computed per message: a template that parses (with jq placeholders when
/// built with jq, their expressions compiled here). What it names is known only per message (a
/// name that is not declared dead-letters that message, reason `no-route`; a jq error on it,
/// reason `invalid`).
fn template(check: &mut Check<'_>, name: &Located<String>, key: &str) -> Option<TargetRef> {
    match crate::template::parse(&name.value, Syntax::new()) {
        Ok(_) => Some(TargetRef::Template(name.value.clone())),
        Err(e) => {
            let at = check.inside(name, e.offset);
            check.report(
                Problem::new(format!("invalid template: {e}"), at)
                    .with_key(key)
                    .with_help(
                        "a destination may be made from each message: `orders.{$.region}`, \
                         `audit.{header.tenant}`, `{subject}`, `{jq: .kind | ascii_downcase}`; \
                         `{{` is a brace",
                    ),
            );
            None
        }
    }
}

/// Refuses a route writing to the channel it consumes.
fn not_back(check: &mut Check<'_>, name: &Located<String>, from: &str, key: &str) -> Option<()> {
    not_back_to(
        check,
        name,
        from,
        key,
        "the route sends",
        "the channel it consumes",
    )
}

/// Refuses `name` (at `key`) when it is `from`, the channel a route consumes: every message
/// would come back to the route forever. `who` and `what` say it in the words of the one that
/// writes (`the step sends`, `the channel its route consumes`).
pub(crate) fn not_back_to(
    check: &mut Check<'_>,
    name: &Located<String>,
    from: &str,
    key: &str,
    who: &str,
    what: &str,
) -> Option<()> {
    if name.value != from {
        return Some(());
    }
    check.report(
        Problem::new(format!("{who} to `{from}`, {what}"), name.at)
            .with_key(key)
            .with_help(
                "every message would come back to the route, forever; send it to another \
                 channel",
            ),
    );
    None
}
