//! Whether the library was loaded through `shared_preload_libraries`: only then do its shared
//! memory, its hooks and its background workers exist.

use std::sync::atomic::{AtomicBool, Ordering};

static PRELOADED: AtomicBool = AtomicBool::new(false);

/// Whether the library was loaded through shared_preload_libraries (so the worker runs).
pub fn preloaded() -> bool {
    PRELOADED.load(Ordering::Relaxed)
}

/// Called by `_PG_init` while shared_preload_libraries is processed.
pub(crate) fn mark_preloaded() {
    PRELOADED.store(true, Ordering::Relaxed);
}
