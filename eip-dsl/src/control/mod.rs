//! Runtime changes: joins and bindings added to and removed from a running flow, out of band
//! (the Control Bus). The seeds make both "via management": a join between two channels, a
//! binding from a topic pattern to channels on an exchange.
//!
//! A change is checked as a flow file's join or binding is, with the same messages (an unknown
//! channel with the closest name, a queue as a join's source, a topic pattern that does not
//! parse, a hop count out of range), against the channels and exchanges of the running flow.
//! A refused change changes nothing. An accepted one is applied to the flow's bus at once:
//! a join forwards from the next message published on its source, a binding matches from the
//! next message routed by its exchange; messages already stored are where they were.
//!
//! Each change gets an id of its own (1, 2, ...), by which it is removed. Only runtime changes
//! can be removed this way: what the flow file declares is changed by editing the file.
//!
//! Routes, adapters and bridges paused through the Control Bus ([`RuntimeChanges::pause`], a
//! Detour) are runtime changes too: kept as the others are (the key table `control/paused`),
//! paused again at the next start, and the pause of one the flow file no longer has dropped
//! with the reason.
//!
//! A flow with a durable store keeps its changes there (the key tables `control/joins` and
//! `control/bindings`), each written before the change is applied and said to be done, and
//! deleted before a removal is said to be done: after a restart, or a crash, [`RuntimeChanges::open`]
//! applies again every change that was accepted and not removed, and says which. A kept change
//! the flow file no longer allows (its channel was renamed, say) is not applied: it is dropped
//! from the store and reported with the reason. A flow without a durable store keeps its
//! changes in memory only: they end with the process.

mod check;
mod kept;
pub mod reload;

use std::sync::{Mutex, MutexGuard};

use eip_core::bus::closest;
use eip_core::endpoint::PauseSwitch;
use eip_core::join::JoinId;
use eip_core::store::durable::StoreError;
use eip_core::topic::BindingId;
use serde::{Deserialize, Serialize};

use crate::compile::{CompileError, FlowView, binding_of, create_join};
use crate::plan::{BindingPlan, JoinPlan};
use kept::Kept;

/// A join as a runtime change names it: the keys of a flow file's join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct JoinChange {
    /// The source: a publish-subscribe channel.
    pub from: String,
    /// The destination channel or queue.
    pub to: String,
    /// Only messages matching this predicate cross.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// The hop count (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<i64>,
    /// Whether the join is archival (to a queue, keeping every copy).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archival: bool,
}

/// A binding as a runtime change names it: an exchange of the flow, a topic pattern (none
/// matches every subject) and the channels it sends to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BindingChange {
    /// The exchange.
    pub exchange: String,
    /// The topic pattern (`stock.*.nyse`, `#`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The target channels.
    pub to: Vec<String>,
}

/// What a pause takes out of the way: a route, or an adapter or bridge (a Detour).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Detour {
    /// The route of this name.
    Route(String),
    /// The adapter or bridge of this name.
    Adapter(String),
}

impl Detour {
    /// `route orders` or `adapter orders-in`.
    pub fn describe(&self) -> String {
        match self {
            Detour::Route(name) => format!("route {name}"),
            Detour::Adapter(name) => format!("adapter {name}"),
        }
    }

    /// Its key in the store: `route:NAME`, `adapter:NAME`.
    fn key(&self) -> String {
        match self {
            Detour::Route(name) => format!("route:{name}"),
            Detour::Adapter(name) => format!("adapter:{name}"),
        }
    }

    fn parse(key: &str) -> Option<Detour> {
        match key.split_once(':')? {
            ("route", name) => Some(Detour::Route(name.to_owned())),
            ("adapter", name) => Some(Detour::Adapter(name.to_owned())),
            _ => None,
        }
    }
}

/// A change kept from an earlier run and what became of it at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reapplied {
    /// The route, adapter or bridge is paused again.
    Paused(Detour),
    /// A kept pause of a route, adapter or bridge the flow no longer has: dropped.
    PauseDropped(Detour),
    /// The join `id` is in place again.
    Join(u64, JoinChange),
    /// The binding `id` is in place again.
    Binding(u64, BindingChange),
    /// The change `id` (described) no longer fits the flow: dropped, for `reason`.
    Dropped {
        /// Its id.
        id: u64,
        /// The change in a few words.
        change: String,
        /// Why it no longer fits.
        reason: String,
    },
}

impl std::fmt::Display for Reapplied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reapplied::Paused(detour) => write!(f, "{} paused again", detour.describe()),
            Reapplied::PauseDropped(detour) => write!(
                f,
                "{} was paused, and the flow has none of that name now: pause dropped",
                detour.describe()
            ),
            Reapplied::Join(id, join) => write!(f, "join {id} ({}) re-applied", join.describe()),
            Reapplied::Binding(id, binding) => {
                write!(f, "binding {id} ({}) re-applied", binding.describe())
            }
            Reapplied::Dropped { id, change, reason } => {
                write!(
                    f,
                    "change {id} ({change}) not re-applied and dropped: {reason}"
                )
            }
        }
    }
}

/// Why a runtime change was not made.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The change is not valid for this flow: every problem found, as a flow file's would be
    /// reported (`unknown channel `x`; did you mean `y`?`).
    #[error("{}", .0.join("; "))]
    Refused(Vec<String>),
    /// No route, adapter or bridge of that name.
    #[error("unknown {what} `{name}`{}", closest.as_ref().map_or(String::new(), |c| format!("; did you mean `{c}`?")))]
    Unknown {
        /// `route` or `adapter`.
        what: &'static str,
        /// The name asked for.
        name: String,
        /// The closest known name.
        closest: Option<String>,
    },
    /// No runtime change has this id (a flow file's joins and bindings have none: edit the
    /// file to change them).
    #[error("no runtime {what} has id {id}")]
    UnknownId {
        /// `join` or `binding`.
        what: &'static str,
        /// The id asked for.
        id: u64,
    },
    /// The checked change could not be built on the bus.
    #[error(transparent)]
    Apply(#[from] CompileError),
    /// The durable store did not keep or forget it: nothing was changed.
    #[error("the durable store failed: {0}")]
    Store(#[from] StoreError),
}

/// The runtime changes of one running flow: what was added, by id, and where it is kept.
pub struct RuntimeChanges {
    state: Mutex<State>,
    kept: Option<Kept>,
    flow: FlowView,
}

#[derive(Default)]
struct State {
    next_id: u64,
    joins: Vec<(u64, JoinChange, JoinId)>,
    bindings: Vec<(u64, BindingChange, BindingId)>,
}

impl RuntimeChanges {
    /// The runtime changes of the running `flow`: on a flow with a durable store, those kept
    /// there from earlier runs applied again (in the order they were made), each listed in
    /// the answer with what became of it.
    pub async fn open(flow: FlowView) -> Result<(RuntimeChanges, Vec<Reapplied>), ControlError> {
        let kept = flow.durable_store().map(Kept::open).transpose()?;
        let changes = RuntimeChanges {
            state: Mutex::new(State {
                next_id: 1,
                ..State::default()
            }),
            kept,
            flow,
        };
        let mut report = Vec::new();
        if let Some(kept) = &changes.kept {
            for (id, change) in kept.read()? {
                report.push(changes.reapply(kept, id, change).await?);
            }
            for detour in kept.read_paused()? {
                match changes.switch(&detour) {
                    Ok(switch) => {
                        switch.pause();
                        report.push(Reapplied::Paused(detour));
                    }
                    Err(_) => {
                        kept.remove_paused(&detour).await?;
                        report.push(Reapplied::PauseDropped(detour));
                    }
                }
            }
        }
        Ok((changes, report))
    }

    /// Pauses the route, adapter or bridge `detour` names (kept first, when changes are);
    /// whether it was running.
    pub async fn pause(&self, detour: &Detour) -> Result<bool, ControlError> {
        let switch = self.switch(detour)?;
        if let Some(kept) = &self.kept {
            kept.put_paused(detour).await?;
        }
        Ok(switch.pause())
    }

    /// Resumes it (forgotten first, when changes are kept); whether it was paused.
    pub async fn resume(&self, detour: &Detour) -> Result<bool, ControlError> {
        let switch = self.switch(detour)?;
        if let Some(kept) = &self.kept {
            kept.remove_paused(detour).await?;
        }
        Ok(switch.resume())
    }

    /// The pause switch of what `detour` names.
    fn switch(&self, detour: &Detour) -> Result<PauseSwitch, ControlError> {
        match detour {
            Detour::Route(name) => {
                let routes = self.flow.routes();
                match routes.iter().find(|r| r.name() == name) {
                    Some(route) => Ok(route.pause_switch()),
                    None => Err(ControlError::Unknown {
                        what: "route",
                        name: name.clone(),
                        closest: closest(name, routes.iter().map(|r| r.name())),
                    }),
                }
            }
            Detour::Adapter(name) => {
                let adapters = self.flow.adapters();
                if adapters.iter().any(|a| a.name == *name) {
                    Ok(self.flow.detours().switch(name))
                } else {
                    Err(ControlError::Unknown {
                        what: "adapter or bridge",
                        name: name.clone(),
                        closest: closest(name, adapters.iter().map(|a| a.name.as_str())),
                    })
                }
            }
        }
    }

    /// Adds `join` to the flow; its id.
    pub async fn add_join(&self, join: JoinChange) -> Result<u64, ControlError> {
        let plan = check::join(&self.flow, &join)?;
        let id = self.take_id();
        if let Some(kept) = &self.kept {
            kept.put_join(id, &join).await?;
        }
        let live = match self.create_join(&plan) {
            Ok(live) => live,
            Err(failed) => {
                if let Some(kept) = &self.kept {
                    kept.remove_join(id).await?;
                }
                return Err(failed.into());
            }
        };
        self.lock().joins.push((id, join, live));
        Ok(id)
    }

    /// Removes the runtime join `id`; what it was.
    pub async fn remove_join(&self, id: u64) -> Result<JoinChange, ControlError> {
        let found = self.lock().joins.iter().position(|(i, ..)| *i == id);
        let Some(index) = found else {
            return Err(ControlError::UnknownId { what: "join", id });
        };
        if let Some(kept) = &self.kept {
            kept.remove_join(id).await?;
        }
        let (_, join, live) = self.lock().joins.remove(index);
        // The source was checked when the join was made, and a running flow's channels stay.
        let _ = self.flow.bus().remove_join(&join.from, live);
        Ok(join)
    }

    /// Adds `binding` to its exchange; its id.
    pub async fn add_binding(&self, binding: BindingChange) -> Result<u64, ControlError> {
        let plan = check::binding(&self.flow, &binding)?;
        let id = self.take_id();
        if let Some(kept) = &self.kept {
            kept.put_binding(id, &binding).await?;
        }
        let live = match self.create_binding(&binding.exchange, &plan) {
            Ok(live) => live,
            Err(failed) => {
                if let Some(kept) = &self.kept {
                    kept.remove_binding(id).await?;
                }
                return Err(failed.into());
            }
        };
        self.lock().bindings.push((id, binding, live));
        Ok(id)
    }

    /// Removes the runtime binding `id`; what it was.
    pub async fn remove_binding(&self, id: u64) -> Result<BindingChange, ControlError> {
        let found = self.lock().bindings.iter().position(|(i, ..)| *i == id);
        let Some(index) = found else {
            return Err(ControlError::UnknownId {
                what: "binding",
                id,
            });
        };
        if let Some(kept) = &self.kept {
            kept.remove_binding(id).await?;
        }
        let (_, binding, live) = self.lock().bindings.remove(index);
        if let Ok(exchange) = self.flow.bus().exchange(&binding.exchange) {
            // Bound when the change was made, and unbound only here: it is there.
            let _ = exchange.unbind(live);
        }
        Ok(binding)
    }

    /// The runtime joins in place, by id.
    pub fn joins(&self) -> Vec<(u64, JoinChange)> {
        let state = self.lock();
        state
            .joins
            .iter()
            .map(|(id, j, _)| (*id, j.clone()))
            .collect()
    }

    /// The runtime bindings in place, by id.
    pub fn bindings(&self) -> Vec<(u64, BindingChange)> {
        let state = self.lock();
        (state.bindings.iter())
            .map(|(id, b, _)| (*id, b.clone()))
            .collect()
    }

    /// The bus ids of the runtime joins, to tell them from the flow file's.
    pub(crate) fn live_join_ids(&self) -> Vec<JoinId> {
        self.lock().joins.iter().map(|(_, _, live)| *live).collect()
    }

    /// The bus ids of the runtime bindings, to tell them from the flow file's.
    pub(crate) fn live_binding_ids(&self) -> Vec<BindingId> {
        self.lock()
            .bindings
            .iter()
            .map(|(_, _, live)| *live)
            .collect()
    }

    /// Whether changes outlive the process (the flow has a durable store).
    pub fn is_kept(&self) -> bool {
        self.kept.is_some()
    }

    /// Applies a kept change again, or drops it from the store if it no longer fits.
    async fn reapply(
        &self,
        kept: &Kept,
        id: u64,
        change: kept::Change,
    ) -> Result<Reapplied, ControlError> {
        {
            let mut state = self.lock();
            state.next_id = state.next_id.max(id + 1);
        }
        let described = change.describe();
        let applied = match &change {
            kept::Change::Join(join) => check::join(&self.flow, join)
                .and_then(|plan| Ok(self.create_join(&plan)?))
                .map(|live| self.lock().joins.push((id, join.clone(), live))),
            kept::Change::Binding(binding) => check::binding(&self.flow, binding)
                .and_then(|plan| Ok(self.create_binding(&binding.exchange, &plan)?))
                .map(|live| self.lock().bindings.push((id, binding.clone(), live))),
        };
        match applied {
            Ok(()) => Ok(match change {
                kept::Change::Join(join) => Reapplied::Join(id, join),
                kept::Change::Binding(binding) => Reapplied::Binding(id, binding),
            }),
            Err(refused) => {
                kept.forget(id, &change).await?;
                Ok(Reapplied::Dropped {
                    id,
                    change: described,
                    reason: refused.to_string(),
                })
            }
        }
    }

    fn create_join(&self, plan: &JoinPlan) -> Result<JoinId, CompileError> {
        create_join(self.flow.bus(), plan)
    }

    fn create_binding(
        &self,
        exchange: &str,
        plan: &BindingPlan,
    ) -> Result<BindingId, CompileError> {
        let made = binding_of(exchange, plan, self.flow.bus())?;
        Ok(self.flow.bus().exchange(exchange)?.bind(made))
    }

    fn take_id(&self) -> u64 {
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        id
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a few lists changed in one statement each: a panic elsewhere while
        // holding the lock leaves them whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl JoinChange {
    /// The join in a few words: `quotes -> quotes.nyse (hops 5, filter $.x == 1)`.
    pub fn describe(&self) -> String {
        let mut text = format!("{} -> {}", self.from, self.to);
        let mut extra = Vec::new();
        if let Some(hops) = self.hops {
            extra.push(format!("hops {hops}"));
        }
        if let Some(filter) = &self.filter {
            extra.push(format!("filter {filter}"));
        }
        if self.archival {
            extra.push("archival".to_owned());
        }
        if !extra.is_empty() {
            text.push_str(&format!(" ({})", extra.join(", ")));
        }
        text
    }
}

impl BindingChange {
    /// The binding in a few words: `market: stock.*.nyse -> quotes.nyse`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} -> {}",
            self.exchange,
            self.key.as_deref().unwrap_or("(every subject)"),
            self.to.join(", ")
        )
    }
}
