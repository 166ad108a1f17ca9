//! A TTL index as the worker and the API see it ([`TtlIndex`]): its table, its parts and its
//! options, as data (the SQL of its conditions is [`crate::deleter`]'s).

use crate::error::raise;
use jsonb_ttl_core::parse::NumericUnit;
use jsonb_ttl_core::path::Resolved;
use pgrx::datum::Interval;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;

/// One TTL index, as the catalog and the system catalogs describe it now; loaded as a target
/// (see [`Scope`]), one per leaf partition of a partitioned table.
#[derive(Clone, Debug)]
pub struct TtlIndex {
    /// The table rows are deleted from (a leaf partition, or the table itself).
    pub table: Oid,
    /// The table the TTL index was created on (the catalog's key).
    pub root: Oid,
    /// `schema.table`, both quoted.
    pub qualified_table: String,
    /// The table's name as regclass prints it, for messages.
    pub display_name: String,
    pub owner: Oid,
    pub resolved: Resolved,
    /// The number of `resolved.column` in `table` (0 when it is gone): names change, it stays.
    pub attnum: i16,
    pub path: String,
    pub expire_after: Interval,
    pub unit: NumericUnit,
    pub index_name: String,
    /// The zone a `timestamp` or `date` column, or a JSON string without an offset, is read
    /// in; `None` means UTC (see [`reference::reference_expr`]).
    pub time_zone: Option<String>,
    /// A foreign table (a partition of a partitioned table): never deleted from, since its
    /// rows live behind a foreign data wrapper.
    pub foreign: bool,
    /// Whether `table` has the TTL index, valid and ready: a restore creates the index after
    /// the catalog row, and a failed `CREATE INDEX CONCURRENTLY` leaves it invalid. The worker
    /// never purges a table without it (it would scan the whole table, every pass).
    pub index_ready: bool,
    /// Paused by the safety brake (see [`crate::brake`]) until `ttl_index_resume()`.
    pub paused: bool,
    /// Released by `ttl_index_resume()` until a visit drains the table.
    pub brake_released: bool,
    /// Whether the catalog has the brake's columns (a database still at 0.1.0's SQL has not).
    pub brake_available: bool,
    /// Only rows this predicate holds for expire (see [`crate::filter`]): its qualified form.
    pub filter_sql: Option<String>,
    /// The reference attribute is kept at the time of the last write (see [`crate::touch`]).
    pub touch: bool,
    /// Expired rows are hidden by a row security policy (see [`crate::hide`]).
    pub hide_expired: bool,
    /// ... and row security was enabled for it, to be disabled with it.
    pub hide_enabled_row_security: bool,
    /// A per-row TTL field (see [`crate::row_ttl`]).
    pub row_ttl: Option<RowTtl>,
    /// Which rows of the table this target purges.
    pub part: Part,
    /// Expired partitions are dropped or detached whole (see [`crate::partitions`]).
    pub drop_partitions: Option<PartitionMode>,
    /// The Citus shard `table` is, of the hash-distributed table `root` (see [`crate::citus`]).
    pub shard: Option<i64>,
    /// Whether now is inside its delete window (see [`crate::controls`]; none: always), as of
    /// the catalog's load (the worker evaluates it again at each pass).
    pub in_window: bool,
    /// Its own cap on the rows of a batch, under `jsonb_ttl.batch_size`.
    pub batch_size: Option<i64>,
    /// Its own cap on the rows removed per second, under `jsonb_ttl.max_removes_per_second`.
    pub max_removes_per_second: Option<i64>,
    /// Its deletes carry the replication origin `jsonb_ttl` (see [`crate::controls`]).
    pub replication_origin: bool,
    /// Each of its batches emits a logical decoding message.
    pub logical_message: bool,
    /// The OID of the TTL index on `table`, when it is recorded as ours by its expression and
    /// predicate ([`crate::tracking`]), valid and ready (for a Citus shard, the worker finds
    /// the shard's copy by its expression and predicate: [`crate::shard_targets::shard_index`]):
    /// for a target with a TTL of its own, the per-row index. The worker reads it directly
    /// ([`crate::leaf_check`]).
    pub index_oid: Option<Oid>,
    /// The delete window as the catalog has it (see [`crate::controls`]), for `in_window`
    /// again at each pass of the worker, which keeps the targets across passes.
    pub window_start: Option<String>,
    pub window_end: Option<String>,
    /// The version of the catalog row it was loaded from (`xmin:ctid`): every change of the
    /// definition writes a new one. Each batch checks it under the row's lock (see
    /// [`crate::catalog::definition_sql`]), and the safety brake counts again under a new one.
    pub version: String,
    /// The table its batches move their rows into (see [`crate::archive`]), by OID.
    pub archive_to: Option<Oid>,
    /// A field TTL (see [`crate::field`]): its batches remove a subtree of each expired
    /// document (`UPDATE`) instead of the row.
    pub field: Option<FieldTtl>,
}

/// What a field TTL removes from each expired document (see [`crate::field`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldTtl {
    /// Its number among its table's field TTLs (the catalog's `field_id`, 1 to 200).
    pub id: i16,
    /// The keys, inside the column of `resolved`, of the subtree removed (`#-`): the date
    /// itself or an object that holds it.
    pub remove: Vec<String>,
    /// Its table's lock was not free when the worker read the catalog: its index is unread,
    /// and it waits for the next pass (see [`crate::field::load_for_worker`]).
    pub busy: bool,
}

/// What the worker does with an expired partition (see [`crate::partitions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionMode {
    Drop,
    Detach,
}

impl PartitionMode {
    /// `drop_partitions` as given: `'drop'` (or `'true'`, `'on'`), `'detach'`, or `'off'` (or
    /// `'false'`, `'none'`: rows are deleted one by one, the default).
    pub fn from_arg(arg: &str) -> Option<PartitionMode> {
        match arg.trim().to_ascii_lowercase().as_str() {
            "drop" | "true" | "on" | "yes" => Some(PartitionMode::Drop),
            "detach" => Some(PartitionMode::Detach),
            "off" | "false" | "no" | "none" => None,
            _ => raise(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("drop_partitions must be 'drop', 'detach' or 'off', not {arg:?}"),
                "'drop' drops an expired partition, 'detach' detaches it (to archive it), 'off' \
                 deletes rows one by one.",
            ),
        }
    }

    /// As the catalog stores it.
    pub fn from_name(name: &str) -> Option<PartitionMode> {
        match name {
            "drop" => Some(PartitionMode::Drop),
            "detach" => Some(PartitionMode::Detach),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PartitionMode::Drop => "drop",
            PartitionMode::Detach => "detach",
        }
    }
}

/// A per-row TTL field: where it is, and the index over the rows that have one.
#[derive(Clone, Debug)]
pub struct RowTtl {
    pub path: String,
    pub resolved: Resolved,
    pub index_name: String,
    /// Whether `index_name` is valid and ready on this target's table.
    pub index_ready: bool,
    /// Its OID on this target's table, when recorded (see [`TtlIndex::index_oid`]).
    pub index_oid: Option<Oid>,
}

/// Which rows of a table a target purges: with a per-row TTL field, two targets share the
/// table (see [`crate::row_ttl`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Every row: no per-row TTL field (and every catalog entry, `Scope::Entries`).
    Whole,
    /// The rows without a TTL of their own, through the TTL index itself.
    FallsBack,
    /// The rows with a TTL of their own, through the per-row index, keyed on their expiry.
    OwnTtl,
    /// The documents of field TTL number `n` (see [`crate::field`]), through its own index.
    Field(i16),
}

impl TtlIndex {
    /// The table whose statistics a visit of this target counts in: the table itself, or for
    /// a Citus shard its distributed table, which `ttl_stats` shows once per node.
    pub fn stats_table(&self) -> Oid {
        match self.shard {
            Some(_) => self.root,
            None => self.table,
        }
    }

    /// The part of its table's statistics a visit of this target counts in (see
    /// [`crate::stats::OWN_TTL`]).
    pub fn stats_part(&self) -> u8 {
        match self.part {
            Part::OwnTtl => crate::stats::OWN_TTL,
            Part::Field(n) => crate::stats::field_part(n),
            _ => crate::stats::WHOLE,
        }
    }

    /// Whose rows a failed batch of this target sets aside (see [`crate::undeletable`]).
    pub fn set_aside_key(&self) -> crate::undeletable::Key {
        (self.table, self.field.as_ref().map(|field| field.id))
    }

    /// What the worker keys a table's batch size by: the table its statistics count in, and
    /// for a field TTL its number (its UPDATE is not the rows' DELETE).
    pub fn sizing_key(&self) -> (Oid, Option<i16>) {
        (
            self.stats_table(),
            self.field.as_ref().map(|field| field.id),
        )
    }

    /// What the worker keys its prepared statements and brake checks by: the table, and the
    /// part of its rows this target purges.
    pub fn target(&self) -> (Oid, Part) {
        (self.table, self.part)
    }

    /// The targets of this entry: itself, or with a per-row TTL field its two parts (the
    /// second one keyed on the expiry time, through its own index, expire_after 0).
    pub(crate) fn parts(self) -> Vec<TtlIndex> {
        let Some(row_ttl) = self.row_ttl.clone() else {
            return vec![self];
        };
        let own = TtlIndex {
            part: Part::OwnTtl,
            index_name: row_ttl.index_name.clone(),
            index_ready: row_ttl.index_ready,
            index_oid: row_ttl.index_oid,
            expire_after: Interval::from_micros(0),
            ..self.clone()
        };
        vec![
            TtlIndex {
                part: Part::FallsBack,
                ..self
            },
            own,
        ]
    }
}
