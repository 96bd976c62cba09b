//! Joins sets held by a send without counting references to them.
//!
//! A send that follows a chain of joins reads, at each channel it stores at, the set of joins
//! leaving that channel, and holds it until it has crossed the join it takes. Counting each
//! hold (an `Arc` clone and drop per hop) costs two locked instructions a hop, which on a chain
//! of ten is a fifth of the send. So the walk pins the current thread in an epoch instead
//! ([`crossbeam_epoch`], once per send) and holds the sets it reads *pinned*: borrowed for as
//! long as the pin lasts.
//!
//! That is sound because a set a walk can read is freed only through a [`JoinsSlot`], and a
//! slot never drops a set it let go of (a change put another in its place, or the slot itself
//! went) at once: it hands the set to the epoch, which drops it once every thread that was
//! pinned at that moment has unpinned. A walk reads a set from a slot under the lock the slot
//! is changed under, after it pinned; so a set it reads is either still in the slot or handed
//! over after the walk pinned, and is kept until the walk unpins. A pin lives in one
//! synchronous stretch of the walk: before the walk awaits anything it turns the sets it still
//! holds into counted ones ([`HeldJoins::counted`]).

use std::ops::Deref;
use std::sync::Arc;

pub(crate) use crossbeam_epoch::{Guard, pin};

use super::Joins;
use super::outgoing::Join;

/// A joins set as a walk holds it.
pub(crate) enum HeldJoins<'g> {
    /// With a reference of its own.
    Counted(Joins),
    /// Kept by the epoch for as long as the guard `'g` lasts (see the module documentation).
    Pinned(&'g [Arc<Join>]),
}

impl From<Joins> for HeldJoins<'_> {
    fn from(joins: Joins) -> Self {
        HeldJoins::Counted(joins)
    }
}

impl Deref for HeldJoins<'_> {
    type Target = [Arc<Join>];

    #[inline(always)]
    fn deref(&self) -> &[Arc<Join>] {
        match self {
            HeldJoins::Counted(joins) => joins,
            HeldJoins::Pinned(joins) => joins,
        }
    }
}

impl<'g> HeldJoins<'g> {
    /// A second hold of the same set, as this one holds it (counted, or pinned for `'g`).
    pub(crate) fn share(&self) -> HeldJoins<'g> {
        match self {
            HeldJoins::Counted(joins) => HeldJoins::Counted(joins.clone()),
            HeldJoins::Pinned(joins) => HeldJoins::Pinned(joins),
        }
    }

    /// The same set with a reference of its own, to hold past the pin.
    pub(crate) fn counted(self) -> HeldJoins<'static> {
        match self {
            HeldJoins::Counted(joins) => HeldJoins::Counted(joins),
            HeldJoins::Pinned(joins) => {
                let data = std::ptr::from_ref(joins);
                // SAFETY: a pinned set was borrowed from an `Arc<[Arc<Join>]>` in a slot
                // (`JoinsSlot::pinned`, from `Arc::as_ptr`), so `data` is that `Arc`'s data
                // pointer; the epoch keeps that `Arc`, and so its allocation, alive while the
                // guard `'g` lasts, and `self` lives within it. The count raised here is the one
                // `from_raw` takes over.
                HeldJoins::Counted(unsafe {
                    Arc::increment_strong_count(data);
                    Arc::from_raw(data)
                })
            }
        }
    }
}

/// Where a channel's log keeps its joins set, so that walks can hold it pinned: a set it lets
/// go of is dropped by the epoch once no walk pinned before can hold it.
#[derive(Default)]
pub(crate) struct JoinsSlot(Option<Joins>);

impl JoinsSlot {
    /// The set, if there is one.
    pub(crate) fn get(&self) -> Option<&Joins> {
        self.0.as_ref()
    }

    /// The set, held pinned while `guard` lasts. The caller holds the lock this slot is
    /// changed under, and pinned `guard` before taking it.
    #[inline(always)]
    pub(crate) fn pinned<'g>(&self, _guard: &'g Guard) -> Option<HeldJoins<'g>> {
        let joins = self.0.as_ref()?;
        // SAFETY: the slot lets go of this set only through `retire`, which hands it to the
        // epoch; the epoch drops it only after every thread pinned at that moment has
        // unpinned, and this thread pinned `guard` before reading the set (under the lock
        // `replace` needs too), so the set outlives `'g`.
        Some(HeldJoins::Pinned(unsafe { &*Arc::as_ptr(joins) }))
    }

    /// Puts `joins` in place of the set there was, which goes to the epoch.
    pub(crate) fn replace(&mut self, joins: Option<Joins>) {
        retire(std::mem::replace(&mut self.0, joins));
    }
}

impl Drop for JoinsSlot {
    fn drop(&mut self) {
        retire(self.0.take());
    }
}

/// Hands a set a slot let go of to the epoch, which drops it once no walk can hold it.
fn retire(joins: Option<Joins>) {
    if let Some(joins) = joins {
        pin().defer(move || drop(joins));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::PublishSubscribe;
    use crate::join::Join as JoinBuilder;

    fn set(to: &[&str]) -> Joins {
        let from = PublishSubscribe::new("from", 4).unwrap();
        for name in to {
            let to = PublishSubscribe::new(name, 4).unwrap();
            JoinBuilder::builder(from.clone(), to).create().unwrap();
        }
        from.joins()
    }

    fn names(joins: &[Arc<Join>]) -> Vec<String> {
        joins
            .iter()
            .map(|j| j.destination().name().to_owned())
            .collect()
    }

    #[test]
    fn a_pinned_set_outlives_its_replacement_and_its_slot() {
        let mut slot = JoinsSlot::default();
        slot.replace(Some(set(&["a", "b"])));
        let guard = pin();
        let held = slot.pinned(&guard).unwrap();
        slot.replace(Some(set(&["c"])));
        assert_eq!(names(&held), ["a", "b"], "the replaced set, still whole");
        assert_eq!(names(slot.get().unwrap()), ["c"]);
        drop(slot);
        let counted = held.counted();
        drop(guard);
        // Unpinned, the epoch may drop what the slot let go of; the counted hold is its own.
        for _ in 0..512 {
            pin().flush();
        }
        assert_eq!(names(&counted), ["a", "b"]);
        assert!(matches!(counted, HeldJoins::Counted(_)));
    }

    #[test]
    fn an_empty_slot_holds_nothing() {
        let mut slot = JoinsSlot::default();
        assert!(slot.pinned(&pin()).is_none());
        slot.replace(None);
        assert!(slot.get().is_none());
    }
}
