//! What eip's fuzz targets share.
//!
//! Each target in `fuzz_targets/` feeds one boundary of eip with bytes libFuzzer makes, and
//! checks the guarantee that boundary gives (never a panic; where an answer can be known another
//! way, the same answer). Targets that drive async code run it on one tokio runtime made once
//! per process, so an input costs its own work only.

use std::sync::OnceLock;

use tokio::runtime::Runtime;

/// The current-thread tokio runtime (with timers) that async targets run their inputs on.
///
/// # Panics
///
/// If the runtime can not be built: the target can not run at all then.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread tokio runtime")
    })
}
