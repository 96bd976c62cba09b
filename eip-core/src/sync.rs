//! Locks that shrug off poisoning.
//!
//! No code that runs under eip's locks panics but a bug, and none leaves the state it guards
//! half-changed across a call that could panic: a poisoned lock still guards consistent data.
//! Refusing it would turn one panicked task into a failure of every later sender, receiver and
//! admin call, so every lock is taken through here instead.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// `mutex`, locked, whether or not a thread panicked while holding it.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
