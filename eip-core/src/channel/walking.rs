//! The sends walking joins, counted per thread, and the joins sets kept for them.
//!
//! A send that follows joins borrows the joins sets it reads ([`HeldJoins`](super::HeldJoins))
//! for as long as its [`Guard`] lasts, so a set let go of while sends walk must be kept until
//! every walk that may hold it has ended. Each thread counts the walks going on it in a word of
//! its own (a walk starts and ends on one thread: a guard can not be sent): starting a walk is a
//! plain store, ending one a single uncontended exchange, and no two threads write one cache
//! line. A retired set is dropped by whoever finds, after it was retired, no walk going on any
//! thread: the retirer at once, or the last walk to end. So a set lets go of what it holds (a
//! removed join's destination, with its store and files) as soon as no send is walking, as with
//! a plain reference count.
//!
//! Why a count read after the retirement is enough: a walk reads a set from its slot under the
//! lock the slot is changed under, and counted itself before it took that lock. If it read the
//! set that was then retired, its critical section came first, so its count happened before
//! the retirer looks, which sees it (or a later value of it: the walk ended).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::Joins;
use crate::sync::lock;

/// One thread's count of the walks going on it. Written by that thread alone; read by
/// whoever looks for walks going.
struct Walker {
    going: AtomicUsize,
}

/// The count of every thread that has walked and still runs.
static WALKERS: Mutex<Vec<Arc<Walker>>> = Mutex::new(Vec::new());
/// Walks started on a thread whose count was already gone (it was shutting down).
static STRAYS: AtomicUsize = AtomicUsize::new(0);
/// Sets let go of while walks were going.
static RETIRED: Mutex<Vec<Joins>> = Mutex::new(Vec::new());
/// Whether `RETIRED` may hold a set: read by every walk as it ends, without the lock.
static ANY_RETIRED: AtomicBool = AtomicBool::new(false);

/// This thread's place in `WALKERS`, taken out when the thread ends.
struct Registered(Arc<Walker>);

impl Registered {
    fn new() -> Self {
        let walker = Arc::new(Walker {
            going: AtomicUsize::new(0),
        });
        lock(&WALKERS).push(walker.clone());
        Registered(walker)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // A walk still going (a guard in another thread-local's destructor) keeps it listed.
        if self.0.going.load(Ordering::SeqCst) == 0 {
            lock(&WALKERS).retain(|w| !Arc::ptr_eq(w, &self.0));
        }
    }
}

thread_local! {
    static HERE: Registered = Registered::new();
}

/// A walk going on: the sets it reads from slots stay whole while this lasts.
pub(crate) struct Guard {
    /// Counted in `STRAYS`, not in the thread's own count.
    stray: bool,
    /// Not `Send`: a guard belongs to a synchronous stretch of one walk, on one thread.
    _here: PhantomData<*const ()>,
}

/// Starts a walk.
pub(crate) fn pin() -> Guard {
    let counted = HERE.try_with(|here| {
        let going = &here.0.going;
        // Only this thread writes it; the lock the walk takes before it reads a slot orders
        // this store before any retirer's look (see the module documentation).
        going.store(going.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    });
    let stray = counted.is_err();
    if stray {
        STRAYS.fetch_add(1, Ordering::SeqCst);
    }
    Guard {
        stray,
        _here: PhantomData,
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let ended = if self.stray {
            STRAYS.fetch_sub(1, Ordering::SeqCst) == 1
        } else {
            // The thread-local is there: it was when the walk started, on this thread, and a
            // thread's locals go only after everything it runs has returned.
            HERE.try_with(|here| {
                let going = &here.0.going;
                let left = going.load(Ordering::Relaxed).saturating_sub(1);
                going.store(left, Ordering::SeqCst);
                left == 0
            })
            .unwrap_or(false)
        };
        // Sequentially consistent with `retire`: of a walk ending now and a set retired now,
        // at least one sees the other, and so one of them releases the set.
        if ended && ANY_RETIRED.load(Ordering::SeqCst) {
            release_retired();
        }
    }
}

/// Keeps a set let go of until no walk that may hold it is going, then drops it.
pub(crate) fn retire(joins: Joins) {
    {
        let mut retired = lock(&RETIRED);
        retired.push(joins);
        ANY_RETIRED.store(true, Ordering::SeqCst);
    }
    release_retired();
}

/// Drops the retired sets if no walk is going (one that starts later can not read them: they
/// are in no slot).
fn release_retired() {
    let released = {
        let mut retired = lock(&RETIRED);
        if walking() {
            // The last walk to end releases them.
            return;
        }
        ANY_RETIRED.store(false, Ordering::SeqCst);
        std::mem::take(&mut *retired)
    };
    // Outside the lock: dropping a set may drop channels, and with them other sets.
    drop(released);
}

/// Whether a walk is going on any thread.
fn walking() -> bool {
    STRAYS.load(Ordering::SeqCst) != 0
        || lock(&WALKERS)
            .iter()
            .any(|w| w.going.load(Ordering::SeqCst) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    fn set() -> Joins {
        Arc::from([])
    }

    /// Waits up to five seconds for `weak` to go: other tests' walks, on this process's other
    /// threads, may hold a release back for as long as they go (microseconds).
    fn let_go(weak: &std::sync::Weak<[Arc<crate::channel::outgoing::Join>]>) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while weak.upgrade().is_some() && Instant::now() < until {
            std::thread::yield_now();
        }
        weak.upgrade().is_none()
    }

    #[test]
    fn a_set_retired_while_a_walk_goes_on_another_thread_is_kept_until_it_ends() {
        let joins = set();
        let weak = Arc::downgrade(&joins);
        let (started, wait_start) = mpsc::channel();
        let (end, wait_end) = mpsc::channel::<()>();
        let walker = std::thread::spawn(move || {
            let guard = pin();
            started.send(()).unwrap();
            wait_end.recv().unwrap();
            drop(guard);
        });
        wait_start.recv().unwrap();
        retire(joins);
        assert!(weak.upgrade().is_some(), "kept while the walk goes");
        end.send(()).unwrap();
        walker.join().unwrap();
        assert!(let_go(&weak), "let go of once no walk goes");
    }

    #[test]
    fn a_walk_on_this_thread_keeps_a_set_too_and_nested_walks_count() {
        let joins = set();
        let weak = Arc::downgrade(&joins);
        let outer = pin();
        let inner = pin();
        retire(joins);
        drop(inner);
        assert!(weak.upgrade().is_some(), "the outer walk still goes");
        drop(outer);
        assert!(let_go(&weak));
    }
}
