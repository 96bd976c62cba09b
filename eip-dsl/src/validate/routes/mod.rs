//! Routes: where each consumes from, its filter and taps, and the one way it sends (`to`,
//! `choice` with `otherwise`, `recipient-list`, or `load-balance`).
//!
//! Beyond names and predicates, two things are refused because they can not be what was
//! meant: two routes consuming the same point-to-point channel (each message would reach only
//! one of them), and a route that sends, taps or discards into the channel it consumes (every
//! message would come back to it forever).

mod actions;
mod concurrency;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use eip_core::channel::ChannelKind;

use super::Check;
use super::names::Names;
use crate::diagnostic::{Problem, suggest_key};
use crate::plan::{ActionPlan, OnErrorPlan, RoutePlan, StepPlan};
use crate::settings::Settings;
use crate::spec::{FlowSpec, Located, Position, RouteSpec, SettingValue};
use crate::step::{self, Entry, Services, on_error};

pub(crate) use actions::not_back_to;
use actions::{own_channel, targets};

/// Checks every route; the plan's routes in the order declared.
pub(crate) fn check(
    spec: &FlowSpec,
    names: &Names,
    base_dir: &Path,
    services: &Services,
    check: &mut Check<'_>,
) -> Vec<RoutePlan> {
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
        let from_spec = spec
            .channels
            .iter()
            .find(|(channel, _)| channel.value == route.from.value)
            .map(|(_, c)| c);
        let from_broker = from_spec.is_some_and(|c| c.store.is_some());
        let from_durable =
            from_broker || from_spec.is_some_and(|c| c.durable.as_ref().is_some_and(|d| d.value));
        let this = Route {
            route,
            spec,
            names,
            base_dir,
            services,
            key: &key,
            from: route.from.value.as_str(),
            from_durable,
            from_broker,
            whole: !check.damage.routes.contains(&i),
        };
        if let Some(plan) = this.check(name, check)
            && from.is_some()
        {
            plans.push(plan);
        }
    }
    plans
}

/// Whether the channel `name` outlives the process: durable, or kept in a broker.
fn durable(spec: &FlowSpec, name: &str) -> bool {
    spec.channels.iter().any(|(channel, c)| {
        channel.value == name && (c.store.is_some() || c.durable.as_ref().is_some_and(|d| d.value))
    })
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

/// One route being checked: what its parts are checked against.
struct Route<'a> {
    route: &'a RouteSpec,
    /// The whole flow, for what the route's channels are.
    spec: &'a FlowSpec,
    names: &'a Names,
    /// The flow file's directory.
    base_dir: &'a Path,
    /// The program's services.
    services: &'a Services,
    /// Its key, `routes[i]`.
    key: &'a str,
    /// The channel it consumes.
    from: &'a str,
    /// Whether that channel outlives the process (durable, or kept in a broker).
    from_durable: bool,
    /// Whether it is kept in a broker.
    from_broker: bool,
    /// Whether it was read without damage: only then are missing or surplus keys reported
    /// (a damaged entry's missing keys may be the damage).
    whole: bool,
}

impl Route<'_> {
    /// The route's plan, or `None` after reporting what is wrong with it.
    fn check(&self, name: String, check: &mut Check<'_>) -> Option<RoutePlan> {
        let route = self.route;
        let before = check.problems.len();
        let mut steps = self.shorthands(check);
        steps.extend(self.steps(&name, check));
        if self.whole {
            self.one_action(&name, check);
        }
        let to = route
            .to
            .as_ref()
            .map(|to| targets(check, self.names, to, self.from, "to", &self.field("to")));
        let choice = self.choice(check);
        let recipients = self.recipients(check);
        let balanced = self.load_balance(check);
        let on_error = self.on_error(&name, check);
        let concurrency = self.concurrency(&name, &steps, check);

        if check.problems.len() > before {
            return None;
        }
        let action = match (to, choice, recipients, balanced) {
            (Some(to), None, None, None) => ActionPlan::To(to),
            (None, Some(choice), None, None) => choice,
            (None, None, Some(recipients), None) => ActionPlan::RecipientList(recipients),
            (None, None, None, Some(balanced)) => balanced,
            // Reported above (none or several).
            _ => return None,
        };
        Some(RoutePlan {
            name,
            from: self.from.to_owned(),
            steps,
            action,
            on_error,
            concurrency: concurrency?,
        })
    }

    /// `on-error:` where a message whose step failed goes. From a channel that outlives the
    /// process, only to one that does too: the message is acked once it is there.
    fn on_error(&self, name: &str, check: &mut Check<'_>) -> Option<OnErrorPlan> {
        let value = self.route.on_error.as_ref()?;
        let place = on_error::Place {
            path: self.field("on-error"),
            what: format!("`on-error` of route `{name}`"),
            from: self.from,
            names: self.names,
            damaged: !self.whole,
        };
        self.on_error_plan(value, &place, check)
    }

    /// An `on-error:` (a route's or a step's) at `place`, checked by the one reading of the
    /// key.
    fn on_error_plan(
        &self,
        value: &Located<SettingValue>,
        place: &on_error::Place<'_>,
        check: &mut Check<'_>,
    ) -> Option<OnErrorPlan> {
        let plan = on_error::check(check, value, place)?;
        if self.from_durable && !durable(self.spec, &plan.to) {
            let at = match &value.value {
                SettingValue::Map(items) => items
                    .iter()
                    .find(|s| s.key.value == "to")
                    .and_then(|s| s.value.at),
                _ => value.at,
            };
            check.report(
                Problem::new(
                    format!(
                        "{} sends to `{}`, which is kept in memory, from `{}`, which outlives \
                         the process: a message acked there would be lost with the process",
                        place.what, plan.to, self.from
                    ),
                    at.or(value.at),
                )
                .with_key(format!("{}.to", place.path))
                .with_help(format!("make `{}` durable: `durable: true`", plan.to)),
            );
            return None;
        }
        Some(plan)
    }

    fn field(&self, k: &str) -> String {
        format!("{}.{k}", self.key)
    }

    /// The `wire-tap:` and `filter:` (with `discard:`) shorthands, as the steps they stand
    /// for: the tap first. A tap waits for room, as a `wire-tap` step does by default.
    fn shorthands(&self, check: &mut Check<'_>) -> Vec<StepPlan> {
        let route = self.route;
        let mut steps = Vec::new();
        if let Some(tap) = &route.wire_tap
            && let Some(channel) = own_channel(
                check,
                self.names,
                tap,
                self.from,
                "wire-tap",
                &self.field("wire-tap"),
            )
        {
            steps.push(StepPlan::wire_tap(channel).at_key(self.field("wire-tap")));
        }
        if let (Some(discard), None, true) = (&route.discard, &route.filter, self.whole) {
            check.report(
                Problem::new(
                    "`discard` without `filter`: no message is ever discarded",
                    discard.at,
                )
                .with_key(self.field("discard"))
                .with_help("add a `filter`, or remove `discard`"),
            );
        }
        let discard = route.discard.as_ref().map(|d| {
            own_channel(
                check,
                self.names,
                d,
                self.from,
                "discard",
                &self.field("discard"),
            )
        });
        // A discard channel that was refused is reported: the route has no plan then.
        if let Some(text) = &route.filter
            && let Some(predicate) = check.predicate(text, &self.field("filter"))
        {
            steps.push(StepPlan::filter(predicate, discard.flatten()).at_key(self.field("filter")));
        }
        steps
    }

    /// The `steps:`, each checked by its kind.
    fn steps(&self, name: &str, check: &mut Check<'_>) -> Vec<StepPlan> {
        let entry = Entry {
            route: name,
            from: self.from,
            from_durable: self.from_durable,
            from_broker: self.from_broker,
            base_dir: self.base_dir,
            names: self.names,
            services: self.services,
        };
        let mut plans = Vec::new();
        for (j, spec) in self.route.steps.iter().enumerate() {
            let key = format!("{}.steps[{j}]", self.key);
            let Some(kind) = step::named(&spec.kind.value) else {
                let problem =
                    step::not_built(&spec.kind.value, spec.kind.at, &key).unwrap_or_else(|| {
                        Problem::new(format!("unknown step `{}`", spec.kind.value), spec.kind.at)
                            .with_key(key.clone())
                            .with_help(suggest_key(&spec.kind.value, &step::names()))
                    });
                check.report(problem);
                continue;
            };
            let items = step::settings_of(kind, &spec.value);
            let settings = Settings {
                path: format!("{key}.{}", kind.name),
                at: spec.at.or(spec.kind.at),
                what: format!("step `{}` of route `{name}`", kind.name),
                items: &items,
                damaged: !self.whole,
            };
            settings.check_keys(check, kind.keys);
            // Read here for every kind that lists the key (the kinds that call out), so that
            // no kind reads it itself.
            let on_error = match (kind.keys.contains(&"on-error"), settings.get("on-error")) {
                (true, Some(value)) => {
                    let place = on_error::Place {
                        path: settings.key("on-error"),
                        what: format!("`on-error` of step {} of route `{name}`", j + 1),
                        from: self.from,
                        names: self.names,
                        damaged: !self.whole,
                    };
                    // A refused one is reported: the route has no plan then.
                    self.on_error_plan(value, &place, check)
                }
                _ => None,
            };
            if let Some(config) = (kind.check)(check, &settings, &entry) {
                plans.push(StepPlan {
                    kind: kind.name,
                    key,
                    config: Arc::from(config),
                    on_error,
                });
            }
        }
        plans
    }
}
