//! Runtime changes kept in the flow's durable store: one key table for joins, one for bindings,
//! each change under its id (eight bytes, big-endian, so the table's key order is the order
//! they were made) as the JSON of [`JoinChange`] or [`BindingChange`]. A put or remove resolves
//! once its commit is on disk.
//!
//! A stored entry that is not a change (damaged past its checksum, or written by a version that
//! knows other keys) is not applied: it is reported as dropped with the reason, and removed.

use std::sync::Arc;

use bytes::Bytes;
use eip_core::store::durable::{Durable, KeyTable, StoreError};

use super::{BindingChange, Detour, JoinChange};

const JOINS: &str = "control/joins";
const BINDINGS: &str = "control/bindings";
/// What is paused: keys `route:NAME` and `adapter:NAME`, no value.
const PAUSED: &str = "control/paused";

/// The key tables of a flow's runtime changes.
pub(super) struct Kept {
    joins: KeyTable,
    bindings: KeyTable,
    paused: KeyTable,
}

/// A kept change, as read back.
pub(super) enum Change {
    Join(JoinChange),
    Binding(BindingChange),
}

impl Change {
    pub(super) fn describe(&self) -> String {
        match self {
            Change::Join(join) => format!("join {}", join.describe()),
            Change::Binding(binding) => format!("binding {}", binding.describe()),
        }
    }
}

impl Kept {
    pub(super) fn open(store: &Arc<Durable>) -> Result<Kept, StoreError> {
        Ok(Kept {
            joins: store.store().table(JOINS)?,
            bindings: store.store().table(BINDINGS)?,
            paused: store.store().table(PAUSED)?,
        })
    }

    /// What was paused and not resumed, as kept; an entry that does not read as a pause is
    /// removed, and left out.
    pub(super) fn read_paused(&self) -> Result<Vec<Detour>, StoreError> {
        let mut paused = Vec::new();
        for (key, _) in self.paused.entries()? {
            match std::str::from_utf8(&key).ok().and_then(Detour::parse) {
                Some(detour) => paused.push(detour),
                None => {
                    tracing::warn!(
                        table = PAUSED,
                        "a kept pause that does not read as one: removed"
                    );
                    drop(self.paused.remove(key));
                }
            }
        }
        Ok(paused)
    }

    pub(super) async fn put_paused(&self, detour: &Detour) -> Result<(), StoreError> {
        let key = Bytes::from(detour.key());
        self.paused.put(key, Bytes::new(), None).await
    }

    pub(super) async fn remove_paused(&self, detour: &Detour) -> Result<(), StoreError> {
        self.paused.remove(Bytes::from(detour.key())).await
    }

    /// Every kept change with its id, in the order they were made. An entry that does not read
    /// as a change is removed, and left out.
    pub(super) fn read(&self) -> Result<Vec<(u64, Change)>, StoreError> {
        let mut changes = read_table(&self.joins, Change::Join)?;
        changes.extend(read_table(&self.bindings, Change::Binding)?);
        changes.sort_by_key(|(id, _)| *id);
        Ok(changes)
    }

    pub(super) async fn put_join(&self, id: u64, join: &JoinChange) -> Result<(), StoreError> {
        self.joins.put(key(id), json(join), None).await
    }

    pub(super) async fn remove_join(&self, id: u64) -> Result<(), StoreError> {
        self.joins.remove(key(id)).await
    }

    pub(super) async fn put_binding(
        &self,
        id: u64,
        binding: &BindingChange,
    ) -> Result<(), StoreError> {
        self.bindings.put(key(id), json(binding), None).await
    }

    pub(super) async fn remove_binding(&self, id: u64) -> Result<(), StoreError> {
        self.bindings.remove(key(id)).await
    }

    /// Removes the kept change `id`, whichever table holds it.
    pub(super) async fn forget(&self, id: u64, change: &Change) -> Result<(), StoreError> {
        match change {
            Change::Join(_) => self.remove_join(id).await,
            Change::Binding(_) => self.remove_binding(id).await,
        }
    }
}

/// The changes kept in `table`, each made a [`Change`] by `wrap`. An entry that does not read
/// as one is removed, and left out.
fn read_table<T: serde::de::DeserializeOwned>(
    table: &KeyTable,
    wrap: fn(T) -> Change,
) -> Result<Vec<(u64, Change)>, StoreError> {
    let mut changes = Vec::new();
    for (key, value) in table.entries()? {
        if let Some(id) = id_of(&key)
            && let Ok(change) = serde_json::from_slice(&value)
        {
            changes.push((id, wrap(change)));
        } else {
            tracing::warn!(
                table = table.name(),
                "a kept change that does not read as one: removed"
            );
            drop(table.remove(key));
        }
    }
    Ok(changes)
}

fn key(id: u64) -> Bytes {
    Bytes::copy_from_slice(&id.to_be_bytes())
}

fn id_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

fn json(value: &impl serde::Serialize) -> Bytes {
    // Strings, numbers and booleans only: serializing them can not fail.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}
