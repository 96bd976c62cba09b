//! What keeps a lane alive for the deliveries a receiver hands out, counted so that handing
//! one out takes no locked instruction.
//!
//! A [`Delivery`](super::Delivery) must reach its lane when it is settled, whenever and
//! wherever that happens, so it holds a reference to it. With an `Arc` clone per delivery,
//! that reference cost two locked instructions a message (the clone's increment and the drop's
//! decrement), about a sixth of a point-to-point message on the machines we measure on. Here a
//! receiver's [`Anchor`] pays for [`PREPAID`] references with one atomic add and hands them out
//! one by one with a plain decrement of its own; a delivery gives its reference back when it
//! is dropped, and the last one given back frees the anchor (and its hold on the lane).

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering, fence};

use super::lane::Lane;

/// References an anchor pays for at once.
pub(crate) const PREPAID: usize = 64;

/// The counted part: the lane, and the references to it that are out (the anchor's own, those
/// it has paid for and not handed out, and one per delivery not yet dropped).
struct Shared {
    refs: AtomicUsize,
    lane: Arc<Lane>,
}

/// A receiver's hold on its lane, from which it hands out [`LaneRef`]s.
pub(crate) struct Anchor {
    shared: NonNull<Shared>,
    /// References paid for and not handed out yet.
    prepaid: usize,
}

/// One reference to a lane, handed out by an [`Anchor`].
pub(crate) struct LaneRef {
    shared: NonNull<Shared>,
}

// SAFETY: both only read the `Shared` they point to (an `Arc<Lane>`, which is Send and Sync)
// and change its count atomically; the memory is freed by whichever gives back the last
// reference, after an acquire fence, as `Arc` does.
unsafe impl Send for Anchor {}
unsafe impl Sync for Anchor {}
unsafe impl Send for LaneRef {}
unsafe impl Sync for LaneRef {}

impl Anchor {
    pub(crate) fn new(lane: Arc<Lane>) -> Self {
        let shared = Box::new(Shared {
            refs: AtomicUsize::new(1),
            lane,
        });
        Anchor {
            shared: NonNull::from(Box::leak(shared)),
            prepaid: 0,
        }
    }

    pub(crate) fn lane(&self) -> &Arc<Lane> {
        &self.shared().lane
    }

    /// A reference for a delivery: one of those paid for, paying for [`PREPAID`] more first
    /// when none is left.
    #[inline]
    pub(crate) fn hand_out(&mut self) -> LaneRef {
        if self.prepaid == 0 {
            let before = self.shared().refs.fetch_add(PREPAID, Ordering::Relaxed);
            // As `Arc` does: a count this high means references are leaked without end.
            if before > isize::MAX as usize {
                std::process::abort();
            }
            self.prepaid = PREPAID;
        }
        self.prepaid -= 1;
        LaneRef {
            shared: self.shared,
        }
    }

    fn shared(&self) -> &Shared {
        // SAFETY: the anchor holds a reference of its own until it is dropped.
        unsafe { self.shared.as_ref() }
    }
}

impl Drop for Anchor {
    fn drop(&mut self) {
        // SAFETY: its own reference and the unused ones it paid for are the anchor's to give.
        unsafe { give_back(self.shared, 1 + self.prepaid) }
    }
}

impl LaneRef {
    pub(crate) fn lane(&self) -> &Arc<Lane> {
        // SAFETY: this reference keeps the `Shared` alive until it is dropped.
        &unsafe { self.shared.as_ref() }.lane
    }
}

impl Drop for LaneRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the reference is this one's to give.
        unsafe { give_back(self.shared, 1) }
    }
}

/// Gives back `n` references to `shared`; the last frees it.
///
/// # Safety
/// The caller holds `n` references to `shared` and does not use it afterwards.
#[inline]
unsafe fn give_back(shared: NonNull<Shared>, n: usize) {
    // SAFETY: the caller's references keep `shared` alive until this subtraction.
    let before = unsafe { shared.as_ref() }
        .refs
        .fetch_sub(n, Ordering::Release);
    if before == n {
        // SAFETY: that was the last reference.
        unsafe { free(shared) }
    }
}

/// Frees `shared` once its last reference is given back: rare, so kept out of line.
///
/// # Safety
/// No reference to `shared` is left.
#[cold]
#[inline(never)]
unsafe fn free(shared: NonNull<Shared>) {
    // Every other holder's last use happened before its release; see them before freeing.
    fence(Ordering::Acquire);
    // SAFETY: no reference is left: `shared` came from `Box::leak` in `Anchor::new` and nobody
    // can reach it any more.
    drop(unsafe { Box::from_raw(shared.as_ptr()) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::PointToPoint;

    fn lane() -> Arc<Lane> {
        PointToPoint::new("anchored", 4).unwrap().queue().clone()
    }

    #[test]
    fn the_lane_lives_until_the_last_reference_is_given_back() {
        let lane = lane();
        let mut anchor = Anchor::new(lane.clone());
        let refs: Vec<LaneRef> = (0..PREPAID + 3).map(|_| anchor.hand_out()).collect();
        assert_eq!(
            Arc::strong_count(&lane),
            2,
            "one hold, however many references"
        );
        drop(anchor);
        assert!(refs.iter().all(|r| r.lane().name.as_ref() == "anchored"));
        let mut refs = refs.into_iter();
        let last = refs.next_back().unwrap();
        drop(refs);
        assert_eq!(Arc::strong_count(&lane), 2, "a delivery still holds it");
        drop(last);
        assert_eq!(
            Arc::strong_count(&lane),
            1,
            "the last reference let go of the lane"
        );
    }

    #[test]
    fn references_given_back_on_other_threads_free_the_anchor_once() {
        let lane = lane();
        for _ in 0..20 {
            let mut anchor = Anchor::new(lane.clone());
            let mut a: Vec<LaneRef> = (0..100).map(|_| anchor.hand_out()).collect();
            let b = a.split_off(50);
            std::thread::scope(|s| {
                s.spawn(move || drop(a));
                s.spawn(move || drop(b));
                s.spawn(move || drop(anchor));
            });
            assert_eq!(Arc::strong_count(&lane), 1);
        }
    }
}
