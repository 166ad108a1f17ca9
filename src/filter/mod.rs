//! Partial TTL (MongoDB's `partialFilterExpression`): `ttl_index_create(…, filter => '<predicate>')`.
//! Only the rows the predicate holds for ever expire; it becomes part of the TTL index's
//! predicate, and of every statement that picks expired rows, so the planner proves the partial
//! index usable (both come from the same text, so they parse to equal trees).
//!
//! The predicate is parsed as PostgreSQL parses an index predicate (`EXPR_KIND_INDEX_PREDICATE`:
//! no subqueries, aggregates, window or set-returning functions) against the table's columns,
//! then checked for IMMUTABLE functions only, and kept in two forms:
//! - `filter`, its canonical `pg_get_expr` form (deparsed under `search_path = pg_catalog,
//!   pg_temp`, so every name outside pg_catalog is qualified): what `ttl_indexes` shows;
//! - `filter_sql`, the same tree written qualified down to its operators, casts and functions
//!   (`OPERATOR(pg_catalog.=)`, `'done'::pg_catalog.text`): what our statements carry, since
//!   they run as the table's owner under the owner's own `search_path`, where a bare `=` could
//!   resolve to some other schema's operator (CVE-2018-1058). Only the node kinds written out
//!   below are accepted; anything else is refused with a HINT, never written ambiguously.

use crate::error::raise;
use crate::extension::Extension;
use pgrx::pg_sys::{self, NodeTag, Oid};
use pgrx::prelude::*;

use pgrx::{PgList, PgSqlErrorCode};
use std::ffi::{CStr, CString};

mod qualify;
use qualify::{qualified, text};

/// A filter, as shown and as written into statements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub shown: String,
    pub sql: String,
}

const HINT: &str = "filter is a boolean expression over the table's columns, as in a partial \
     index's WHERE clause: operators, IMMUTABLE functions, casts, AND / OR / NOT, IS [NOT] NULL, \
     IN (…), = ANY (…), COALESCE; for example filter => $$doc->>'kind' = 'session'$$. It is \
     read with search_path = pg_catalog: qualify other names (myschema.f(col)).";

fn refuse(code: PgSqlErrorCode, message: impl Into<String>) -> ! {
    raise(code, message, HINT)
}

/// Parses `text` as the filter of a TTL index on `table` (which the caller has locked or
/// owns), or raises. Runs no user code: parse analysis only.
pub fn analyze(table: Oid, text: &str) -> Filter {
    if text.trim().is_empty() {
        refuse(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "filter must not be empty",
        );
    }
    let sql = CString::new(format!("SELECT WHERE {text}")).unwrap_or_else(|_| {
        refuse(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "filter must not contain a NUL character",
        )
    });
    let expr = PgTryBuilder::new(|| unsafe {
        where_clause(&sql).map(|clause| transform(table, &sql, clause, true))
    })
    .catch_others(|e| match e {
        pg_sys::panic::CaughtError::PostgresError(report)
        | pg_sys::panic::CaughtError::ErrorReport(report) => raise(
            report.sql_error_code(),
            format!("invalid filter: {}", report.message()),
            HINT,
        ),
        other => other.rethrow(),
    })
    .execute();
    let Some(expr) = expr else {
        refuse(
            PgSqlErrorCode::ERRCODE_SYNTAX_ERROR,
            "filter must be a single boolean expression",
        );
    };
    unsafe {
        if pg_sys::contain_mutable_functions(expr) {
            raise(
                PgSqlErrorCode::ERRCODE_INVALID_OBJECT_DEFINITION,
                "functions in a filter must be marked IMMUTABLE",
                "The filter is part of the TTL index's predicate, which must give the same \
                 answer for a row whenever it is evaluated.",
            );
        }
        with_canonical_output(|| Filter {
            shown: deparse(table, expr),
            sql: qualified(table, expr).unwrap_or_else(|what| {
                refuse(
                    PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                    format!("a filter cannot use {what}"),
                )
            }),
        })
    }
}

/// Runs `f` with the settings that shape how constants print pinned (ISO dates, `postgres`
/// intervals, exact floats), so a filter's constants are written the same whatever the
/// creating session's settings, and read back the same under the owner's (a `DateStyle` of
/// `SQL, DMY` would print `01/02/2020`, which reads back otherwise under `MDY`).
fn with_canonical_output<R>(f: impl FnOnce() -> R) -> R {
    let level = unsafe { pg_sys::NewGUCNestLevel() };
    for (name, value) in [
        (c"DateStyle", "ISO, YMD"),
        (c"IntervalStyle", "postgres"),
        (c"extra_float_digits", "3"),
    ] {
        crate::gucs::override_setting(name, value);
    }
    let result = f();
    unsafe { pg_sys::AtEOXact_GUC(true, level) };
    result
}

/// `expr`, an expression over `table`, as `pg_get_expr` shows it (under the caller's
/// search_path: ours, pinned, qualifies every name outside pg_catalog).
unsafe fn deparse(table: Oid, expr: *mut pg_sys::Node) -> String {
    let relname = pg_sys::get_rel_name(table);
    text(pg_sys::deparse_expression(
        expr,
        pg_sys::deparse_context_for(relname, table),
        false,
        false,
    ))
}

/// `text`, an index predicate (`predicate`) or index expression over `table` that we wrote,
/// as `pg_get_expr` shows it in `pg_index`: what an index built on `text` compares as.
pub fn canonical(table: Oid, text: &str, predicate: bool) -> String {
    let sql = CString::new(format!("SELECT WHERE {text}")).expect("no NUL in our SQL");
    unsafe {
        let clause = where_clause(&sql).expect("our SQL is one expression");
        deparse(table, transform(table, &sql, clause, predicate))
    }
}

/// The WHERE clause of `sql` (`SELECT WHERE …`), when `sql` is that and nothing more.
unsafe fn where_clause(sql: &CStr) -> Option<*mut pg_sys::Node> {
    let parsed = PgList::<pg_sys::RawStmt>::from_pg(pg_sys::raw_parser(
        sql.as_ptr(),
        pg_sys::RawParseMode::RAW_PARSE_DEFAULT,
    ));
    if parsed.len() != 1 {
        return None;
    }
    let stmt = (*parsed.get_ptr(0)?).stmt;
    if stmt.is_null() || (*stmt).type_ != NodeTag::T_SelectStmt {
        return None;
    }
    let select = &*(stmt as *mut pg_sys::SelectStmt);
    let bare = select.op == pg_sys::SetOperation::SETOP_NONE
        && select.distinctClause.is_null()
        && select.intoClause.is_null()
        && select.targetList.is_null()
        && select.fromClause.is_null()
        && select.groupClause.is_null()
        && select.havingClause.is_null()
        && select.windowClause.is_null()
        && select.valuesLists.is_null()
        && select.sortClause.is_null()
        && select.limitOffset.is_null()
        && select.limitCount.is_null()
        && select.lockingClause.is_null()
        && select.withClause.is_null();
    (bare && !select.whereClause.is_null()).then_some(select.whereClause)
}

/// The clause as PostgreSQL analyzes an index predicate (`predicate`) or an index expression
/// of `table`.
unsafe fn transform(
    table: Oid,
    sql: &CStr,
    clause: *mut pg_sys::Node,
    predicate: bool,
) -> *mut pg_sys::Node {
    let pstate = pg_sys::make_parsestate(std::ptr::null_mut());
    (*pstate).p_sourcetext = sql.as_ptr();
    let lock = pg_sys::AccessShareLock as i32;
    let rel = pg_sys::relation_open(table, lock);
    let item =
        pg_sys::addRangeTableEntryForRelation(pstate, rel, lock, std::ptr::null_mut(), false, true);
    pg_sys::addNSItemToQuery(pstate, item, false, true, true);
    let expr = match predicate {
        true => pg_sys::coerce_to_boolean(
            pstate,
            pg_sys::transformExpr(
                pstate,
                clause,
                pg_sys::ParseExprKind::EXPR_KIND_INDEX_PREDICATE,
            ),
            c"filter".as_ptr(),
        ),
        false => pg_sys::transformExpr(
            pstate,
            clause,
            pg_sys::ParseExprKind::EXPR_KIND_INDEX_EXPRESSION,
        ),
    };
    pg_sys::assign_expr_collations(pstate, expr);
    pg_sys::relation_close(rel, pg_sys::NoLock as i32);
    pg_sys::free_parsestate(pstate);
    expr
}

/// The filter of the TTL index of `table`, read again from its index's predicate (which
/// PostgreSQL keeps by column number): after ALTER TABLE … RENAME COLUMN the stored text names
/// the old column, and every statement carrying it would fail. `predicate` is the index's
/// `pg_index.indpred`; ours is `<reference> IS NOT NULL AND <filter> [AND …]`, an AND whose
/// second argument is the filter. `None` when it is not of that form.
pub fn from_index_predicate(table: Oid, predicate: &str) -> Option<Filter> {
    let predicate = CString::new(predicate).ok()?;
    unsafe {
        let node = pg_sys::stringToNode(predicate.as_ptr()) as *mut pg_sys::Node;
        if node.is_null() || (*node).type_ != NodeTag::T_BoolExpr {
            return None;
        }
        let and = &*(node as *mut pg_sys::BoolExpr);
        if and.boolop != pg_sys::BoolExprType::AND_EXPR {
            return None;
        }
        let filter = PgList::<pg_sys::Node>::from_pg(and.args).get_ptr(1)?;
        with_canonical_output(|| {
            Some(Filter {
                shown: deparse(table, filter),
                sql: qualified(table, filter).ok()?,
            })
        })
    }
}

/// The filter of the TTL index of `tbl` written again from its index (see
/// [`from_index_predicate`]): the sql/api.sql event trigger calls it after ALTER TABLE …
/// RENAME COLUMN of a table whose TTL index has a filter.
#[pg_extern(
    volatile,
    parallel_unsafe,
    name = "_ttl_filter_refresh",
    schema = "jsonb_ttl_internal"
)]
#[search_path(pg_catalog, pg_temp)]
fn ttl_filter_refresh(tbl: Oid) {
    let ext = Extension::current();
    let Some(index) = crate::catalog::load(&ext, Some(tbl), crate::catalog::Scope::Entries)
        .into_iter()
        .next()
    else {
        return;
    };
    let predicate = Spi::get_one_with_args::<String>(
        "SELECT i.indpred::pg_catalog.text FROM pg_catalog.pg_index i \
         JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid \
         WHERE i.indrelid OPERATOR(pg_catalog.=) $1 \
           AND c.relname OPERATOR(pg_catalog.=) $2::pg_catalog.name",
        &[tbl.into(), index.index_name.clone().into()],
    )
    .ok()
    .flatten();
    // not built yet (build => false): the statements it hands back will name the old column
    // and fail, saying which; ttl_index_drop and create again
    let Some(filter) = predicate.and_then(|predicate| from_index_predicate(tbl, &predicate)) else {
        return;
    };
    let owner = ext.owner();
    crate::owner::as_catalog_owner(owner, || {
        Spi::run_with_args(
            &format!(
                "UPDATE {catalog} SET filter = $2, filter_sql = $3 \
                 WHERE table_oid::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
                catalog = ext.catalog(),
            ),
            &[tbl.into(), filter.shown.into(), filter.sql.into()],
        )
    })
    .unwrap_or_else(|e| error!("jsonb_ttl: cannot update the TTL index: {e}"));
}
