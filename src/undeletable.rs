//! Rows the worker cannot delete: set aside, counted, logged once, retried later with backoff.
//!
//! A DELETE that fails fails its whole statement. When a batch fails for a reason that belongs
//! to its rows (a trigger raises for some of them, a foreign key restricts, a deferrable
//! Django key still has a referencing row), the worker retries the batch in halves down to
//! single rows ([`crate::deleter::delete_in_parts`]); the rows that fail alone are set aside
//! here. Every later pick skips them (`ctid <> ALL (…)`), so the rows behind them in the TTL
//! index keep being purged, however many are kept ahead. After a backoff (1 minute, doubling up
//! to an hour) they are tried again. At most [`MAX_PER_TABLE`] rows of a table are set aside:
//! past that the table fails its visit like any other error, and waits for the next pass.

use crate::txn::Failure;
use pgrx::pg_sys::{ItemPointerData, Oid};
use pgrx::prelude::*;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Rows of one table set aside at once, at most: the list is a parameter of every batch.
pub const MAX_PER_TABLE: usize = 1000;
const FIRST_BACKOFF: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

struct SetAside {
    rows: Vec<ItemPointerData>,
    retry_at: Instant,
    backoff: Duration,
}

/// Whose rows are set aside: a table's (`None`), or a table's for one of its field TTLs (its
/// number): a row whose field cannot be removed may still be deleted, and the other way round.
pub type Key = (Oid, Option<i16>);

/// The rows set aside in each table of this worker's database.
#[derive(Default)]
pub struct Undeletable {
    tables: HashMap<Key, SetAside>,
}

impl Undeletable {
    /// The rows of `table` a batch must skip now. Once their backoff has passed they are
    /// forgotten, and so tried again.
    pub fn rows(&mut self, table: Key) -> Vec<ItemPointerData> {
        match self.tables.get_mut(&table) {
            Some(set) if set.retry_at <= Instant::now() => {
                set.rows.clear();
                Vec::new()
            }
            Some(set) => set.rows.clone(),
            None => Vec::new(),
        }
    }

    /// How many rows of `table` are set aside now.
    pub fn count(&self, table: Key) -> usize {
        self.tables.get(&table).map_or(0, |set| set.rows.len())
    }

    /// Whether `table` may set no more rows aside.
    pub fn full(&self, table: Key) -> bool {
        self.count(table) >= MAX_PER_TABLE
    }

    /// Sets `rows` of `table` aside, logging each with its error once. The backoff doubles
    /// each time a table sets rows aside again after a retry.
    pub fn add(&mut self, table: Key, display_name: &str, rows: Vec<(ItemPointerData, Failure)>) {
        if rows.is_empty() {
            return;
        }
        let set = self.tables.entry(table).or_insert(SetAside {
            rows: Vec::new(),
            retry_at: Instant::now(),
            backoff: FIRST_BACKOFF / 2,
        });
        if set.rows.is_empty() {
            set.backoff = (set.backoff * 2).min(MAX_BACKOFF);
            set.retry_at = Instant::now() + set.backoff;
        }
        for (row, failure) in rows {
            log!(
                "jsonb_ttl: row {} of table {display_name} cannot be {} ({failure}); \
                 set aside, tried again in {} s",
                ctid_text(&row),
                match table.1 {
                    None => "deleted",
                    Some(_) => "updated to remove its expired field",
                },
                set.backoff.as_secs()
            );
            set.rows.push(row);
        }
    }

    /// Forgets the tables that are no longer TTL targets.
    pub fn retain(&mut self, keep: impl Fn(Oid) -> bool) {
        self.tables.retain(|&(table, _), _| keep(table));
    }
}

/// A row id as PostgreSQL prints a ctid: `(block,offset)`.
fn ctid_text(row: &ItemPointerData) -> String {
    let block = (u32::from(row.ip_blkid.bi_hi) << 16) | u32::from(row.ip_blkid.bi_lo);
    format!("({block},{})", row.ip_posid)
}
