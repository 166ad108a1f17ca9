//! A statement prepared once with a generic plan and kept across transactions: the worker's
//! batch statements, executed batch after batch without being planned again.
//!
//! PostgreSQL's plan cache plans a statement for its parameters (a custom plan) at its first
//! five executions and then keeps one only when the generic plan looks no dearer; a batch's
//! `LIMIT $2` kept it on custom plans, each batch planned again. `SPI_prepare_cursor` with
//! `CURSOR_OPT_GENERIC_PLAN` asks for the generic plan from the first execution (planned, as
//! every statement of ours, under the planner pins of [`crate::planner`]: an index scan of the
//! TTL index). `plan_cache_mode` would say the same, but for the owner's triggers too, which run
//! inside the statement. pgrx 0.18 prepares with `SPI_prepare`, which takes no such option. (A
//! table owner whose role sets `plan_cache_mode = force_custom_plan` has the batches of their
//! tables planned each time: their settings apply in the batch, and that one wins.)

use pgrx::pg_sys::{self, Datum};
use std::ffi::{c_char, CStr, CString};
use std::ptr::NonNull;

/// A statement prepared with a generic plan, kept (`SPI_keepplan`) until dropped.
pub struct GenericPlan {
    plan: NonNull<pg_sys::_SPI_plan>,
}

impl GenericPlan {
    /// Prepares `sql`, whose parameters have the types `args`; in an SPI connection.
    pub fn prepare(sql: &str, args: &[pg_sys::Oid]) -> Result<GenericPlan, String> {
        let sql = CString::new(sql).map_err(|e| e.to_string())?;
        let mut args = args.to_vec();
        let plan = unsafe {
            pg_sys::SPI_prepare_cursor(
                sql.as_ptr(),
                args.len() as i32,
                args.as_mut_ptr(),
                pg_sys::CURSOR_OPT_GENERIC_PLAN as i32,
            )
        };
        let plan = NonNull::new(plan).ok_or_else(|| spi_error(unsafe { pg_sys::SPI_result }))?;
        let kept = unsafe { pg_sys::SPI_keepplan(plan.as_ptr()) };
        if kept < 0 {
            // (still the connection's: SPI_finish frees it)
            return Err(spi_error(kept));
        }
        Ok(GenericPlan { plan })
    }

    /// Executes the statement with the parameters `args` (`None`: NULL), as a statement that
    /// may write; in an SPI connection. The rows it processed, and the first column of the
    /// first row it returned, if any, read as a `bigint` (a count: passed by value, so it
    /// outlives the connection).
    pub fn execute(&self, args: &[Option<Datum>]) -> Result<(u64, Option<i64>), String> {
        let mut values: Vec<Datum> = args.iter().map(|a| a.unwrap_or(Datum::from(0))).collect();
        let nulls: Vec<c_char> = args
            .iter()
            .map(|a| if a.is_some() { b' ' } else { b'n' } as c_char)
            .collect();
        let status = unsafe {
            pg_sys::SPI_execute_plan(
                self.plan.as_ptr(),
                values.as_mut_ptr(),
                nulls.as_ptr(),
                false,
                0,
            )
        };
        if status < 0 {
            return Err(spi_error(status));
        }
        unsafe {
            let processed = pg_sys::SPI_processed;
            let table = pg_sys::SPI_tuptable;
            if table.is_null() || processed == 0 {
                return Ok((processed, None));
            }
            let mut is_null = false;
            let first = pg_sys::SPI_getbinval(*(*table).vals, (*table).tupdesc, 1, &mut is_null);
            Ok((processed, (!is_null).then_some(first.value() as i64)))
        }
    }
}

impl GenericPlan {
    /// Executes a batch statement (see [`GenericPlan::execute`]) and returns the rows it
    /// removed: a DELETE's own count, or for a statement that returns rows (a DELETE whose rows
    /// go into an archive, [`crate::archive::wrap`]) the count in its one row.
    pub fn removed(&self, args: &[Option<Datum>]) -> Result<u64, String> {
        let (processed, first) = self.execute(args)?;
        Ok(match unsafe { pg_sys::SPI_tuptable }.is_null() {
            true => processed,
            false => first.unwrap_or(0) as u64,
        })
    }
}

impl Drop for GenericPlan {
    fn drop(&mut self) {
        unsafe { pg_sys::SPI_freeplan(self.plan.as_ptr()) };
    }
}

/// The text of an SPI status code.
fn spi_error(status: i32) -> String {
    unsafe { CStr::from_ptr(pg_sys::SPI_result_code_string(status)) }
        .to_string_lossy()
        .into_owned()
}
