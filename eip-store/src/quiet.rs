//! Running a read of the storage engine so that a panic in it is an error, and prints nothing.
//!
//! redb trusts the pages it reads: a page zeroed or overwritten on disk can make it panic
//! (`entered unreachable code` in its B-tree cursor) instead of returning an error. The store
//! catches such a panic around every read of records and turns it into damage to work around.
//! The default panic hook would still print the panic and its backtrace to standard error for
//! every damaged page met; [`catch`] therefore installs, once per process, a hook that stays
//! silent on the thread while [`catch`] runs and hands every other panic to the hook that was
//! there before.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// Whether this thread is inside [`catch`].
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static INSTALL: Once = Once::new();

/// Runs `f`; a panic inside it is returned as its message instead of unwinding further, and is
/// not printed.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let outer = QUIET.with(|quiet| quiet.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|quiet| quiet.set(outer));
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no detail".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_is_its_message_and_the_thread_goes_on() {
        let caught = catch(|| -> u32 { panic!("page 7 is zeroed") });
        assert_eq!(caught, Err("page 7 is zeroed".to_string()));
        assert_eq!(catch(|| 5), Ok(5));
        assert!(!QUIET.with(Cell::get), "quiet only while inside");
    }
}
