//! Joins sets held by a send without counting references to them.
//!
//! A send that follows a chain of joins reads, at each channel it stores at, the set of joins
//! leaving that channel, and holds it until it has crossed the join it takes. Counting each
//! hold (an `Arc` clone and drop per hop) costs two locked instructions a hop, which on a chain
//! of ten is a fifth of the send. So a send instead counts itself once as walking
//! ([`pin`](super::walking::pin), see [`walking`](super::walking)) and holds the sets it reads
//! *pinned*: borrowed for as long as its [`Guard`] lasts.
//!
//! That is sound because a set a walk reads is freed only once no walk that could have read
//! it is still going. A log keeps its set in a [`JoinsSlot`]. A set the slot lets go of for
//! another (a join added or removed) is retired, not dropped, and kept until no walk that
//! started before is going. A slot dropped with its log drops its set at once: a walk reaches
//! a log only over a join from a set that is itself in a slot or retired, which holds that
//! join's channel, and so the log, past the walk's end. A guard lives in one synchronous
//! stretch of the walk (it can not be sent to another thread): before the walk awaits anything
//! it turns the sets it still holds into counted ones ([`HeldJoins::counted`]).

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

use super::Joins;
use super::outgoing::Join;
use super::walking::{Guard, retire};

/// A joins set as a walk holds it.
pub(crate) enum HeldJoins<'g> {
    /// With a reference of its own.
    Counted(Joins),
    /// Kept whole for as long as the guard `'g` lasts (see the module documentation).
    Pinned(Pinned<'g>),
}

/// A set in a slot, borrowed for `'g`: the pointer `Arc::as_ptr` gave for it, kept as it is
/// (a reference made from it could reach only the set, not the count beside it that
/// [`HeldJoins::counted`] raises).
#[derive(Clone, Copy)]
pub(crate) struct Pinned<'g> {
    data: NonNull<[Arc<Join>]>,
    _set: PhantomData<&'g [Arc<Join>]>,
}

// SAFETY: a `Pinned` is used as the `&'g [Arc<Join>]` it stands for, which is Send and Sync.
unsafe impl Send for Pinned<'_> {}
unsafe impl Sync for Pinned<'_> {}

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
            // SAFETY: the set is kept whole while `'g` lasts (`JoinsSlot::pinned`), and the
            // reference made here lives no longer than `self`.
            HeldJoins::Pinned(pinned) => unsafe { pinned.data.as_ref() },
        }
    }
}

impl<'g> HeldJoins<'g> {
    /// A second hold of the same set, as this one holds it (counted, or pinned for `'g`).
    pub(crate) fn share(&self) -> HeldJoins<'g> {
        match self {
            HeldJoins::Counted(joins) => HeldJoins::Counted(joins.clone()),
            HeldJoins::Pinned(pinned) => HeldJoins::Pinned(*pinned),
        }
    }

    /// The same set with a reference of its own, to hold past the pin.
    pub(crate) fn counted(self) -> HeldJoins<'static> {
        match self {
            HeldJoins::Counted(joins) => HeldJoins::Counted(joins),
            HeldJoins::Pinned(pinned) => {
                let data = pinned.data.as_ptr().cast_const();
                // SAFETY: `data` is what `Arc::as_ptr` gave for an `Arc<[Arc<Join>]>` in a slot
                // (`JoinsSlot::pinned`); that `Arc`, and so its allocation, is kept while `'g`
                // lasts (see the module documentation), and `self` lives within it. The count
                // raised here is the one `from_raw` takes over.
                HeldJoins::Counted(unsafe {
                    Arc::increment_strong_count(data);
                    Arc::from_raw(data)
                })
            }
        }
    }
}

/// Where a channel's log keeps its joins set, so that walks can hold it pinned: a set it lets
/// go of for another is retired, dropped once no walk that may hold it is going.
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
        // The slot lets go of this set for another only through `retire`, which keeps it until
        // no walk that started before is going; `_guard` started before this read (under the
        // lock `replace` needs too), so the set outlives `'g`. The slot drops it when the slot
        // itself goes, with its log, which outlives the walk (see the module documentation).
        let data = NonNull::new(Arc::as_ptr(joins).cast_mut())?;
        Some(HeldJoins::Pinned(Pinned {
            data,
            _set: PhantomData,
        }))
    }

    /// Puts `joins` in place of the set there was, which is retired when what this returns is
    /// dropped: after the caller has let go of the lock the slot is changed under, since
    /// dropping a set may drop channels.
    pub(crate) fn replace(&mut self, joins: Option<Joins>) -> Retiring {
        Retiring(std::mem::replace(&mut self.0, joins))
    }
}

/// A set a slot let go of, retired when this is dropped.
#[must_use = "dropped, it retires the set: drop it once the slot's lock is let go of"]
pub(crate) struct Retiring(Option<Joins>);

impl Drop for Retiring {
    fn drop(&mut self) {
        if let Some(joins) = self.0.take() {
            retire(joins);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::PublishSubscribe;
    use crate::channel::walking::pin;
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
        drop(slot.replace(Some(set(&["a", "b"]))));
        let guard = pin();
        let held = slot.pinned(&guard).unwrap();
        drop(slot.replace(Some(set(&["c"]))));
        assert_eq!(names(&held), ["a", "b"], "the replaced set, still whole");
        assert_eq!(names(slot.get().unwrap()), ["c"]);
        drop(slot);
        let counted = held.counted();
        drop(guard);
        assert_eq!(names(&counted), ["a", "b"], "a counted hold is its own");
        assert!(matches!(counted, HeldJoins::Counted(_)));
    }

    #[test]
    fn an_empty_slot_holds_nothing() {
        let mut slot = JoinsSlot::default();
        assert!(slot.pinned(&pin()).is_none());
        drop(slot.replace(None));
        assert!(slot.get().is_none());
    }
}
