//! What a background worker of jsonb_ttl (the launcher and the per-database workers) needs from
//! PostgreSQL beyond what pgrx offers: acting on signals between transactions, waiting on the
//! latch without turning an idle cancel into an exit, and a time limit on one batch.

use pgrx::bgworkers::BackgroundWorker;
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::time::Duration;

/// Reads postgresql.conf again after a SIGHUP.
pub fn reload_config_if_asked() {
    if BackgroundWorker::sighup_received() {
        unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
    }
}

/// Acts on signals between transactions: SIGTERM (shutdown, DROP DATABASE,
/// pg_terminate_backend) makes PostgreSQL's own `die()` handler end the process here, or at
/// the next CHECK_FOR_INTERRUPTS inside a statement, so a long batch never delays it; SIGHUP
/// reloads the configuration. A cancel (`pg_cancel_backend`, SIGINT) that arrives while no
/// batch runs has nothing to cancel and is dropped, as an idle backend drops it: raised here,
/// outside any transaction, it would end the worker.
pub fn handle_signals() {
    ignore_idle_cancel();
    pgrx::check_for_interrupts!();
    reload_config_if_asked();
}

/// Drops a pending query cancel; for code that runs outside any transaction.
fn ignore_idle_cancel() {
    unsafe {
        if pg_sys::QueryCancelPending != 0 {
            pg_sys::QueryCancelPending = 0;
            debug1!("jsonb_ttl: cancel request ignored, no batch is running");
        }
    }
}

/// Arms the worker's own time limit on one batch (`jsonb_ttl.batch_timeout`), through
/// PostgreSQL's statement timeout, which nothing arms for SPI in a background worker: when it
/// fires, the batch's statement is cancelled with "canceling statement due to statement
/// timeout" and its transaction rolls back. Disarmed when dropped.
pub struct BatchTimer {
    armed: bool,
}

/// `STATEMENT_TIMEOUT` of `enum TimeoutId` (utils/timeout.h, the same from PostgreSQL 13 to
/// 18), whose handler InitPostgres registers in every backend, background workers included.
const STATEMENT_TIMEOUT: std::ffi::c_int = 3;

unsafe extern "C-unwind" {
    // utils/timeout.h, which pgrx does not bind
    fn enable_timeout_after(id: std::ffi::c_int, delay_ms: std::ffi::c_int);
    fn disable_timeout(id: std::ffi::c_int, keep_indicator: bool);
}

impl BatchTimer {
    pub fn arm(timeout_ms: i32) -> BatchTimer {
        if timeout_ms > 0 {
            unsafe { enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms) };
        }
        BatchTimer {
            armed: timeout_ms > 0,
        }
    }
}

impl Drop for BatchTimer {
    fn drop(&mut self) {
        if self.armed {
            unsafe { disable_timeout(STATEMENT_TIMEOUT, false) };
        }
    }
}

unsafe extern "C-unwind" {
    /// PostgreSQL's SIGTERM handler for backends (tcop/postgres.c), the C symbol itself: it only
    /// sets ProcDiePending and the latch; the process ends at the next CHECK_FOR_INTERRUPTS.
    #[link_name = "die"]
    fn postgres_die(signal: std::ffi::c_int);
}

/// Makes SIGTERM end the process the way it ends a backend (see [`handle_signals`]).
pub fn die_on_sigterm() {
    // PostgreSQL 18 made pqsignal() a macro over pqsignal_be() in the backend (port.h)
    #[cfg(not(feature = "pg18"))]
    unsafe {
        pg_sys::pqsignal(pg_sys::SIGTERM as i32, Some(postgres_die))
    };
    #[cfg(feature = "pg18")]
    unsafe {
        pg_sys::pqsignal_be(pg_sys::SIGTERM as i32, Some(postgres_die))
    };
}

/// Sleeps `duration` or until a signal, and acts on it. Exits if the postmaster died.
pub fn sleep(duration: Duration) {
    if !wait_latch(duration) {
        unsafe { pg_sys::proc_exit(1) };
    }
    handle_signals();
}

/// Waits on the process latch for `duration` at most; false when the postmaster died. Unlike
/// pgrx's `BackgroundWorker::wait_latch`, which runs CHECK_FOR_INTERRUPTS as it wakes, a cancel
/// that arrived meanwhile is dropped first (see [`handle_signals`]), so it cannot end the process.
pub fn wait_latch(duration: Duration) -> bool {
    let events = pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_POSTMASTER_DEATH;
    // rounded up: a wait of less than a millisecond would not wait at all, and spin
    let timeout_ms = duration.as_micros().div_ceil(1000).min(i32::MAX as u128) as std::ffi::c_long;
    let woken = unsafe {
        let woken = pg_sys::WaitLatch(
            pg_sys::MyLatch,
            events as i32,
            timeout_ms,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
        woken
    };
    ignore_idle_cancel();
    pgrx::check_for_interrupts!();
    woken & pg_sys::WL_POSTMASTER_DEATH as i32 == 0
}
