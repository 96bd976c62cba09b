//! What differs between two versions of a flow file, compared as data (comments, formatting
//! and key order aside), part by part: each channel, route, adapter and bridge by its name,
//! the joins and bindings apart (see [`super::joins`]).
//!
//! What can change while the flow runs becomes a [`Reshape`]: channels added or removed;
//! routes, adapters and bridges added, removed or changed (a changed one is replaced). What
//! can not is named with the reason, and the reload is refused:
//!
//! - a channel declared differently (its kind, capacity, store, datatype, dead letter
//!   channel...): routes, joins and bindings hold it, so it changes at restart; adding a
//!   channel under another name and routing to it changes it live;
//! - `dead-letters` added, removed or changed: it is the flow's own;
//! - an exchange added, removed, or changed beyond its bindings;
//! - `store:` (the durable store is opened at start), `history:` (every channel and route
//!   records it from the start), `admin:` (the admin server starts with the flow), and any
//!   other top-level section.
//!
//! A file a flow file refers to (a schema, a template) is read when the flow file is checked;
//! a change to it alone is seen at restart.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::compile::Reshape;
use crate::plan::{DEAD_LETTERS, Plan};

/// The difference between two versions of a flow file.
#[derive(Debug, Default)]
pub(super) struct Difference {
    /// What differs that needs a restart, each with the reason.
    pub(super) restart: Vec<String>,
    /// What differs that changes live.
    pub(super) reshape: Reshape,
}

/// Compares the documents `old` and `new`, checked into the plans `was` and `is`.
pub(super) fn compare(old: &Value, new: &Value, was: &Plan, is: &Plan) -> Difference {
    let mut difference = Difference::default();
    let empty = Map::new();
    let (old, new) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let null = Value::Null;
    for key in keys {
        let (a, b) = (old.get(key).unwrap_or(&null), new.get(key).unwrap_or(&null));
        match key.as_str() {
            "joins" | "channels" | "routes" | "adapters" | "bridges" => {}
            "exchanges" if without_bindings(a) != without_bindings(b) => {
                difference.restart.push(
                    "`exchanges` beyond their bindings (an exchange is added, removed or \
                     changed at restart)"
                        .to_owned(),
                );
            }
            "exchanges" => {}
            _ if a != b => difference.restart.push(section_reason(key)),
            _ => {}
        }
    }
    channels(old, new, was, is, &mut difference);
    let (old_routes, new_routes) = (routes(old, was), routes(new, is));
    let routes = parts(&old_routes, &new_routes);
    difference.reshape.routes_added = routes.added;
    difference.reshape.routes_removed = routes.removed;
    difference.reshape.routes_changed = routes.changed;
    let (old_adapters, new_adapters) = (adapters(old, was), adapters(new, is));
    let adapters = parts(&old_adapters, &new_adapters);
    difference.reshape.adapters_added = adapters.added;
    difference.reshape.adapters_removed = adapters.removed;
    difference.reshape.adapters_changed = adapters.changed;
    difference
}

/// Why a top-level section other than the parts needs a restart.
fn section_reason(key: &str) -> String {
    let why = match key {
        "store" => " (the durable store is opened at start)",
        "history" => " (every channel and route records Message History from the start)",
        "admin" => " (the admin server starts with the flow)",
        _ => "",
    };
    format!("`{key}`{why}")
}

/// The channels added and removed, into `difference`; those changed, and `dead-letters`
/// changing at all, into its restart reasons.
fn channels(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    was: &Plan,
    is: &Plan,
    difference: &mut Difference,
) {
    let (before, after) = (section(old, "channels"), section(new, "channels"));
    let fragment = |plan: &Plan, declared: &Map<String, Value>| -> Vec<(String, Value)> {
        (plan.channels.iter())
            .filter_map(|c| Some((c.name.clone(), declared.get(&c.name)?.clone())))
            .collect()
    };
    let found = parts(&fragment(was, before), &fragment(is, after));
    for name in &found.changed {
        difference.restart.push(format!(
            "channel `{name}` declared differently (a channel is added or removed while the \
             flow runs, never changed: declare one under another name and route to it)"
        ));
    }
    let own = |names: &[String]| names.iter().any(|n| n == DEAD_LETTERS);
    if own(&found.added) || own(&found.removed) {
        difference.restart.push(format!(
            "channel `{DEAD_LETTERS}` declared or undeclared (it is the flow's own dead letter \
             channel)"
        ));
    }
    difference.reshape.channels_added = found.added;
    difference.reshape.channels_removed = found.removed;
}

/// The section `key` of a document, as a map (empty if it is not one).
fn section<'a>(document: &'a Map<String, Value>, key: &str) -> &'a Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    document
        .get(key)
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// Each route of `plan` with what the document declares of it (the routes are a list, in the
/// plan's order).
fn routes(document: &Map<String, Value>, plan: &Plan) -> Vec<(String, Value)> {
    let declared = document.get("routes").and_then(Value::as_array);
    let declared = declared.map(Vec::as_slice).unwrap_or_default();
    (plan.routes.iter())
        .zip(declared)
        .map(|(route, value)| (route.name.clone(), value.clone()))
        .collect()
}

/// Each adapter and bridge of `plan` with what the document declares of it, the section
/// included (one moved from `adapters:` to `bridges:` is changed).
fn adapters(document: &Map<String, Value>, plan: &Plan) -> Vec<(String, Value)> {
    (plan.adapters.iter())
        .filter_map(|adapter| {
            ["adapters", "bridges"].iter().find_map(|key| {
                let value = section(document, key).get(&adapter.name)?;
                Some((adapter.name.clone(), serde_json::json!({ *key: value })))
            })
        })
        .collect()
}

/// Names added, removed and changed between two versions of one kind of part.
#[derive(Debug, Default)]
struct Parts {
    added: Vec<String>,
    removed: Vec<String>,
    changed: Vec<String>,
}

/// The parts of `new` not in `old` (in `new`'s order), those of `old` not in `new` (in
/// `old`'s), and those in both declared differently (in `new`'s).
fn parts(old: &[(String, Value)], new: &[(String, Value)]) -> Parts {
    let find = |all: &[(String, Value)], name: &str| {
        all.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    };
    let mut found = Parts::default();
    for (name, value) in new {
        match find(old, name) {
            None => found.added.push(name.clone()),
            Some(before) if &before != value => found.changed.push(name.clone()),
            Some(_) => {}
        }
    }
    for (name, _) in old {
        if find(new, name).is_none() {
            found.removed.push(name.clone());
        }
    }
    found
}

/// The exchanges with their bindings left out.
fn without_bindings(exchanges: &Value) -> Value {
    let mut exchanges = exchanges.clone();
    if let Some(all) = exchanges.as_object_mut() {
        for exchange in all.values_mut() {
            if let Some(fields) = exchange.as_object_mut() {
                fields.remove("bindings");
            }
        }
    }
    exchanges
}
