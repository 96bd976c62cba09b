//! Routes: where each consumes from, its filter and taps, and the one way it sends (`to`,
//! `choice` with `otherwise`, or `recipient-list`).
//!
//! Beyond names and predicates, two things are refused because they can not be what was
//! meant: two routes consuming the same point-to-point channel (each message would reach only
//! one of them), and a route that sends, taps or discards into the channel it consumes (every
//! message would come back to it forever).

use std::collections::HashMap;

use eip_core::channel::ChannelKind;

use super::Check;
use super::names::{Names, listed_twice};
use crate::diagnostic::Problem;
use crate::plan::{ActionPlan, RecipientsPlan, RoutePlan, TargetRef};
use crate::spec::{FlowSpec, Located, Position, RecipientsSpec, RouteSpec};

/// Checks every route; the plan's routes in the order declared.
pub(crate) fn check(spec: &FlowSpec, names: &Names, check: &mut Check<'_>) -> Vec<RoutePlan> {
    let mut route_names: HashMap<String, Option<Position>> = HashMap::new();
    let mut consumers: HashMap<String, (usize, Option<Position>)> = HashMap::new();
    let mut plans = Vec::new();
    for (i, route) in spec.routes.iter().enumerate() {
        let key = format!("routes[{i}]");
        let name = route_name(route, i, &key, &mut route_names, check);
        let from = names.channel(check, &route.from, "from", &format!("{key}.from"));
        if from == Some(ChannelKind::PointToPoint) {
            match consumers.get(&route.from.value) {
                Some((other, other_at)) => check.report(
                    Problem::new(
                        format!(
                            "routes {} and {} both consume the point-to-point channel `{}`: each \
                             message would reach only one of them",
                            other + 1,
                            i + 1,
                            route.from.value
                        ),
                        route.from.at,
                    )
                    .with_key(format!("{key}.from"))
                    .with_label(*other_at, "also consumed here")
                    .with_help(format!(
                        "to give each route every message, make `{}` a publish-subscribe channel",
                        route.from.value
                    )),
                ),
                None => {
                    consumers.insert(route.from.value.clone(), (i, route.from.at));
                }
            }
        }
        if let Some(plan) = check_route(route, i, name, names, &key, check)
            && from.is_some()
        {
            plans.push(plan);
        }
    }
    plans
}

/// The route's name (given, or `route-N`), reporting an empty or repeated one.
fn route_name(
    route: &RouteSpec,
    i: usize,
    key: &str,
    seen: &mut HashMap<String, Option<Position>>,
    check: &mut Check<'_>,
) -> String {
    let (name, at) = match &route.name {
        Some(name) => {
            if name.value.trim().is_empty() {
                check.report(
                    Problem::new("a route's `name` must not be empty", name.at)
                        .with_key(format!("{key}.name"))
                        .with_help(format!(
                            "leave it out for the default name `route-{}`",
                            i + 1
                        )),
                );
            }
            (name.value.clone(), name.at.or(route.at))
        }
        None => (format!("route-{}", i + 1), route.at),
    };
    if let Some(first) = seen.get(&name) {
        let default = if route.name.is_none() {
            " (its default name)"
        } else {
            ""
        };
        check.report(
            Problem::new(format!("two routes are named `{name}`{default}"), at)
                .with_key(format!("{key}.name"))
                .with_label(*first, "first named here")
                .with_help("give each route its own `name`"),
        );
    } else {
        seen.insert(name.clone(), at);
    }
    name
}

fn check_route(
    route: &RouteSpec,
    i: usize,
    name: String,
    names: &Names,
    key: &str,
    check: &mut Check<'_>,
) -> Option<RoutePlan> {
    let field = |k: &str| format!("{key}.{k}");
    let whole = !check.damage.routes.contains(&i);
    let from = route.from.value.as_str();
    let before = check.problems.len();

    let filter = route
        .filter
        .as_ref()
        .and_then(|f| check.predicate(f, &field("filter")));
    if let (Some(discard), None, true) = (&route.discard, &route.filter, whole) {
        check.report(
            Problem::new(
                "`discard` without `filter`: no message is ever discarded",
                discard.at,
            )
            .with_key(field("discard"))
            .with_help("add a `filter`, or remove `discard`"),
        );
    }
    let discard = route
        .discard
        .as_ref()
        .and_then(|d| own_channel(check, names, d, from, "discard", &field("discard")));
    let wire_tap = route
        .wire_tap
        .as_ref()
        .and_then(|t| own_channel(check, names, t, from, "wire-tap", &field("wire-tap")));

    let actions: Vec<(&str, Option<Position>)> = [
        ("to", route.to.as_ref().map(|t| t.at)),
        ("choice", route.choice.as_ref().map(|c| c.at)),
        (
            "recipient-list",
            route.recipient_list.as_ref().map(|r| r.at),
        ),
    ]
    .into_iter()
    .filter_map(|(k, at)| at.map(|at| (k, at)))
    .collect();
    if whole {
        match actions.as_slice() {
            [] => check.report(
                Problem::new(
                    format!(
                        "route `{name}` sends nowhere: it needs `to`, `choice` or `recipient-list`"
                    ),
                    route.at,
                )
                .with_key(key)
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
                        .with_key(field(other))
                        .with_help("split it into two routes, or keep one"),
                    );
                }
            }
        }
        if let (Some(otherwise), None) = (&route.otherwise, &route.choice) {
            check.report(
                Problem::new("`otherwise` without `choice`", otherwise.at)
                    .with_key(field("otherwise"))
                    .with_help("`otherwise` is where a `choice` sends what no `when` matches; use `to` for a route without a choice"),
            );
        }
    }

    let to = route
        .to
        .as_ref()
        .map(|to| targets(check, names, to, from, "to", &field("to")));
    let choice = route.choice.as_ref().map(|clauses| {
        if clauses.value.is_empty() && whole {
            check.report(
                Problem::new("`choice` has no `when` clause", clauses.at)
                    .with_key(field("choice"))
                    .with_help("add `- {when: PREDICATE, to: NAME}`"),
            );
        }
        let when: Vec<_> = clauses
            .value
            .iter()
            .enumerate()
            .filter_map(|(j, clause)| {
                let at = format!("{key}.choice[{j}]");
                let predicate = check.predicate(&clause.when, &format!("{at}.when"));
                let target = target(check, names, &clause.to, from, &format!("{at}.to"));
                predicate.zip(target)
            })
            .collect();
        let otherwise = route
            .otherwise
            .as_ref()
            .and_then(|o| target(check, names, o, from, &field("otherwise")));
        ActionPlan::Choice { when, otherwise }
    });
    let recipients = route.recipient_list.as_ref().map(|list| match &list.value {
        RecipientsSpec::Fixed(fixed) => {
            let located = Located {
                value: fixed.clone(),
                at: list.at,
            };
            RecipientsPlan::Fixed(targets(
                check,
                names,
                &located,
                from,
                "recipient-list",
                &field("recipient-list"),
            ))
        }
        RecipientsSpec::Header(header) => {
            if header.value.trim().is_empty() {
                check.report(
                    Problem::new("the recipient list's `header` must not be empty", header.at)
                        .with_key(field("recipient-list.header")),
                );
            }
            RecipientsPlan::Header(header.value.clone())
        }
    });

    if check.problems.len() > before {
        return None;
    }
    let action = match (to, choice, recipients) {
        (Some(to), None, None) => ActionPlan::To(to),
        (None, Some(choice), None) => choice,
        (None, None, Some(recipients)) => ActionPlan::RecipientList(recipients),
        // Reported above (none or several).
        _ => return None,
    };
    Some(RoutePlan {
        name,
        from: from.to_owned(),
        filter,
        discard,
        wire_tap,
        action,
    })
}

/// A channel (not an exchange) that the route writes to: `discard` or `wire-tap`.
fn own_channel(
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

/// A channel or exchange the route sends to.
fn target(
    check: &mut Check<'_>,
    names: &Names,
    name: &Located<String>,
    from: &str,
    key: &str,
) -> Option<TargetRef> {
    let target = names.target(check, name, key)?;
    not_back(check, name, from, key)?;
    Some(target)
}

/// A list of targets: at least one, each once.
fn targets(
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
        if let Some(t) = target(check, names, name, from, &key) {
            out.push(t);
        }
    }
    out
}

/// Refuses a route writing to the channel it consumes.
fn not_back(check: &mut Check<'_>, name: &Located<String>, from: &str, key: &str) -> Option<()> {
    if name.value != from {
        return Some(());
    }
    check.report(
        Problem::new(
            format!("the route sends to `{from}`, the channel it consumes"),
            name.at,
        )
        .with_key(key)
        .with_help(
            "every message would come back to the route, forever; send it to another channel",
        ),
    );
    None
}
