//! The joins and bindings of a reloaded flow file: those the old file has more of than the new
//! one are removed from the bus, those the new one has more of are created; those in both
//! stay as they are, with what they are carrying. Joins and bindings added at runtime
//! ([`RuntimeChanges`]) are not the file's: a reload neither removes nor duplicates them.

use std::collections::BTreeMap;

use eip_core::MessageBus;

use crate::compile::{CompileError, binding_of, create_join};
use crate::control::RuntimeChanges;
use crate::plan::{BindingPlan, JoinPlan, Plan};

/// A join as compared between versions of the file.
fn join_key(join: &JoinPlan) -> (String, String, u32, bool, Option<String>) {
    let filter = join.filter.as_ref().map(|f| f.to_string());
    (
        join.from.clone(),
        join.to.clone(),
        join.hops,
        join.archival,
        filter,
    )
}

/// A binding as compared between versions of the file.
fn binding_key(exchange: &str, binding: &BindingPlan) -> (String, Option<String>, Vec<String>) {
    let key = binding.key.as_ref().map(|k| k.as_str().to_owned());
    (exchange.to_owned(), key, binding.to.clone())
}

/// How many times each key occurs.
fn counted<K: Ord>(keys: impl Iterator<Item = K>) -> BTreeMap<K, usize> {
    let mut counts = BTreeMap::new();
    for key in keys {
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// Removes the joins and bindings `old` has more of than `new`, creates those `new` has more
/// of; each said in words.
pub(super) fn apply(
    old: &Plan,
    new: &Plan,
    bus: &MessageBus,
    runtime: &RuntimeChanges,
) -> Result<Vec<String>, CompileError> {
    let mut said = Vec::new();
    let old_joins: Vec<_> = old.joins.iter().map(|j| (join_key(j), j)).collect();
    let new_joins: Vec<_> = new.joins.iter().map(|j| (join_key(j), j)).collect();
    let (mut gone, mut more) = excess(&old_joins, &new_joins);
    for (key, _) in &old_joins {
        if take_one(&mut gone, key) {
            remove_join(bus, runtime, key);
            said.push(format!("join {} -> {} removed", key.0, key.1));
        }
    }
    for (key, join) in &new_joins {
        if take_one(&mut more, key) {
            create_join(bus, join)?;
            said.push(format!("join {} -> {} added", key.0, key.1));
        }
    }
    let bindings = |plan: &Plan| {
        let mut all = Vec::new();
        for exchange in &plan.exchanges {
            for binding in &exchange.bindings {
                all.push((binding_key(&exchange.name, binding), binding.clone()));
            }
        }
        all
    };
    let (old_bindings, new_bindings) = (bindings(old), bindings(new));
    let (mut gone, mut more) = excess(&old_bindings, &new_bindings);
    for (key, _) in &old_bindings {
        if take_one(&mut gone, key) {
            remove_binding(bus, runtime, key);
            said.push(format!("binding {}: {} removed", key.0, describe_key(key)));
        }
    }
    for (key, binding) in &new_bindings {
        if take_one(&mut more, key) {
            let bound = binding_of(&key.0, binding, bus)?;
            let exchange = bus.exchange(&key.0)?;
            exchange.bind(bound);
            said.push(format!("binding {}: {} added", key.0, describe_key(key)));
        }
    }
    Ok(said)
}

/// By key: how many more `old` has than `new` (to remove), and how many more `new` has than
/// `old` (to add).
fn excess<K: Ord + Clone, V>(
    old: &[(K, V)],
    new: &[(K, V)],
) -> (BTreeMap<K, usize>, BTreeMap<K, usize>) {
    let was = counted(old.iter().map(|(k, _)| k.clone()));
    let is = counted(new.iter().map(|(k, _)| k.clone()));
    let over = |a: &BTreeMap<K, usize>, b: &BTreeMap<K, usize>| {
        a.iter()
            .map(|(k, n)| (k.clone(), n.saturating_sub(b.get(k).copied().unwrap_or(0))))
            .collect()
    };
    (over(&was, &is), over(&is, &was))
}

/// Whether one more `key` is counted in `left`; counts it down.
fn take_one<K: Ord>(left: &mut BTreeMap<K, usize>, key: &K) -> bool {
    match left.get_mut(key) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}

fn describe_key(key: &(String, Option<String>, Vec<String>)) -> String {
    format!(
        "{} -> {}",
        key.1.as_deref().unwrap_or("(every subject)"),
        key.2.join(", ")
    )
}

/// Removes one join of the file matching `key` from the bus (never one added at runtime).
fn remove_join(
    bus: &MessageBus,
    runtime: &RuntimeChanges,
    key: &(String, String, u32, bool, Option<String>),
) {
    let Ok(eip_core::channel::Channel::PublishSubscribe(source)) = bus.channel(&key.0) else {
        return;
    };
    let theirs = runtime.live_join_ids();
    let found = source
        .joins()
        .iter()
        .find(|join| {
            !theirs.contains(&join.id())
                && join.destination().name() == key.1
                && join.hops() == key.2
                && join.is_archival() == key.3
                && join.filter().map(|f| f.description().to_owned()) == key.4
        })
        .map(|join| join.id());
    if let Some(id) = found {
        source.remove_join(id);
    }
}

/// Removes one binding of the file matching `key` from its exchange (never one added at
/// runtime).
fn remove_binding(
    bus: &MessageBus,
    runtime: &RuntimeChanges,
    key: &(String, Option<String>, Vec<String>),
) {
    let Ok(exchange) = bus.exchange(&key.0) else {
        return;
    };
    let theirs = runtime.live_binding_ids();
    let found = exchange
        .bindings()
        .into_iter()
        .find(|(id, binding)| {
            let targets: Vec<String> = binding
                .targets()
                .iter()
                .map(|c| c.name().to_owned())
                .collect();
            !theirs.contains(id)
                && binding.key().map(|k| k.as_str().to_owned()) == key.1
                && targets == key.2
        })
        .map(|(id, _)| id);
    if let Some(id) = found {
        let _ = exchange.unbind(id);
    }
}
