//! Reloading a flow file into the running flow (`eip run`'s SIGHUP and `--watch`).
//!
//! The file is read and checked as at start. A file with problems is refused with its
//! diagnostics, and the running flow goes on unchanged. A valid file is compared with the one
//! the flow runs, as data (comments, formatting and key order aside):
//!
//! - only its joins, or the bindings of its exchanges, differ: the difference is applied at
//!   once (a join or binding gone is removed, a new one created; those in both stay as they
//!   are, with what they are carrying), and the file becomes the one the flow runs;
//! - anything else differs (a channel, a route, an adapter, the store, an exchange itself):
//!   nothing is applied, and the answer names what differs: those changes need a restart
//!   today, and a flow half changed would be neither the old file nor the new one;
//! - nothing differs: nothing to do.
//!
//! Joins and bindings added at runtime ([`RuntimeChanges`]) are not the file's: a reload
//! neither removes nor duplicates them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::RuntimeChanges;
use crate::compile::{CompileError, FlowView, binding_of, create_join};
use crate::diagnostic::FlowErrors;
use crate::plan::{BindingPlan, JoinPlan, Plan};

/// The flow file a running flow was made from, to reload.
pub struct FlowFile {
    path: PathBuf,
    document: Value,
    plan: Plan,
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reloaded {
    /// The file says what it said.
    Unchanged,
    /// Joins and bindings changed: each change, in words (`join quotes -> audit added`).
    Applied(Vec<String>),
}

/// Why a reload changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum NotReloaded {
    /// The file could not be read.
    #[error("{0}")]
    Unreadable(String),
    /// The file has problems: every one, with its position.
    #[error("the flow file has problems:\n{}", .0.render())]
    Invalid(Box<FlowErrors>),
    /// Parts other than joins and bindings differ.
    #[error(
        "the file changes {}: that needs a restart (only joins and bindings change while the \
         flow runs)",
        .0.join(", ")
    )]
    NeedsRestart(Vec<String>),
    /// A checked join or binding could not be made (the flow is as it was before it).
    #[error(transparent)]
    Apply(#[from] CompileError),
}

impl FlowFile {
    /// The file at `path` whose checked `plan` the flow was compiled from (read again here, as
    /// data, to compare later versions with).
    pub fn new(path: &Path, plan: Plan) -> Result<FlowFile, NotReloaded> {
        Ok(FlowFile {
            document: document(&read(path)?),
            path: path.to_owned(),
            plan,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again and applies what changed to the running `flow` (see the module's
    /// rules); `runtime`'s own joins and bindings stay.
    pub fn reload(
        &mut self,
        flow: &FlowView,
        runtime: &RuntimeChanges,
    ) -> Result<Reloaded, NotReloaded> {
        // Read once: the text checked is the text compared.
        let text = read(&self.path)?;
        let name = self.path.display().to_string();
        let base_dir = self.path.parent().unwrap_or_else(|| Path::new(""));
        let plan = crate::load::load_str(&text, &name, base_dir)
            .map_err(|e| NotReloaded::Invalid(Box::new(e)))?;
        let document = document(&text);
        let differs = other_differences(&self.document, &document);
        if !differs.is_empty() {
            return Err(NotReloaded::NeedsRestart(differs));
        }
        let said = apply(&self.plan, &plan, flow, runtime)?;
        self.document = document;
        self.plan = plan;
        Ok(if said.is_empty() {
            Reloaded::Unchanged
        } else {
            Reloaded::Applied(said)
        })
    }
}

fn read(path: &Path) -> Result<String, NotReloaded> {
    crate::load::read_text_file(path, crate::load::MAX_FLOW_FILE_BYTES as u64)
        .map_err(|e| NotReloaded::Unreadable(e.to_string()))
}

/// The text as data (a text that is not YAML never gets this far: the check refuses it).
fn document(text: &str) -> Value {
    crate::load::document(text).unwrap_or(Value::Null)
}

/// The top-level sections, and the exchanges' parts, that differ between `old` and `new`,
/// joins and bindings aside.
fn other_differences(old: &Value, new: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (old, new) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut differs = Vec::new();
    for key in keys {
        let (a, b) = (
            old.get(key).unwrap_or(&Value::Null),
            new.get(key).unwrap_or(&Value::Null),
        );
        match key.as_str() {
            "joins" => {}
            "exchanges" if without_bindings(a) != without_bindings(b) => {
                differs.push("`exchanges` (beyond their bindings)".to_owned());
            }
            "exchanges" => {}
            _ if a != b => differs.push(format!("`{key}`")),
            _ => {}
        }
    }
    differs
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
fn apply(
    old: &Plan,
    new: &Plan,
    flow: &FlowView,
    runtime: &RuntimeChanges,
) -> Result<Vec<String>, NotReloaded> {
    let mut said = Vec::new();
    let old_joins: Vec<_> = old.joins.iter().map(|j| (join_key(j), j)).collect();
    let new_joins: Vec<_> = new.joins.iter().map(|j| (join_key(j), j)).collect();
    let (mut gone, mut more) = excess(&old_joins, &new_joins);
    for (key, _) in &old_joins {
        if take_one(&mut gone, key) {
            remove_join(flow, runtime, key);
            said.push(format!("join {} -> {} removed", key.0, key.1));
        }
    }
    for (key, join) in &new_joins {
        if take_one(&mut more, key) {
            create_join(flow.bus(), join)?;
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
            remove_binding(flow, runtime, key);
            said.push(format!("binding {}: {} removed", key.0, describe_key(key)));
        }
    }
    for (key, binding) in &new_bindings {
        if take_one(&mut more, key) {
            let bound = binding_of(&key.0, binding, flow.bus())?;
            let exchange = flow.bus().exchange(&key.0).map_err(CompileError::from)?;
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
    flow: &FlowView,
    runtime: &RuntimeChanges,
    key: &(String, String, u32, bool, Option<String>),
) {
    let Ok(eip_core::channel::Channel::PublishSubscribe(source)) = flow.bus().channel(&key.0)
    else {
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
    flow: &FlowView,
    runtime: &RuntimeChanges,
    key: &(String, Option<String>, Vec<String>),
) {
    let Ok(exchange) = flow.bus().exchange(&key.0) else {
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
