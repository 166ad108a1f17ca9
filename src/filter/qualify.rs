//! A filter written out qualified down to its operators, casts and functions
//! (`OPERATOR(pg_catalog.=)`, `'done'::pg_catalog.text`): what our statements carry, since
//! they run as the table's owner under the owner's own `search_path`. Only the node kinds
//! written out here are accepted; anything else is refused, never written ambiguously.

use pgrx::pg_sys::{self, NodeTag, Oid};
use pgrx::prelude::*;
use pgrx::spi::{quote_identifier, quote_literal};
use pgrx::PgList;
use std::ffi::CStr;

pub(super) fn text(ptr: *const std::ffi::c_char) -> String {
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// `schema.name` of a type, with its modifier.
fn type_name(type_oid: Oid, typmod: i32) -> String {
    let flags = pg_sys::FORMAT_TYPE_FORCE_QUALIFY
        | if typmod >= 0 {
            pg_sys::FORMAT_TYPE_TYPEMOD_GIVEN
        } else {
            0
        };
    text(unsafe { pg_sys::format_type_extended(type_oid, typmod, flags as u16) })
}

/// `schema.name` of an operator, for `OPERATOR(…)`.
fn operator_name(opno: Oid) -> Result<String, String> {
    Spi::get_one_with_args::<String>(
        "SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                OPERATOR(pg_catalog.||) o.oprname::pg_catalog.text \
         FROM pg_catalog.pg_operator o \
         JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) o.oprnamespace \
         WHERE o.oid OPERATOR(pg_catalog.=) $1",
        &[opno.into()],
    )
    .ok()
    .flatten()
    .ok_or_else(|| format!("operator {}", opno.to_u32()))
}

/// `schema.name` of a function or a collation, both quoted.
fn qualified_name(catalog: &str, name: &str, namespace: &str, oid: Oid) -> Result<String, String> {
    Spi::get_one_with_args::<String>(
        &format!(
            "SELECT pg_catalog.quote_ident(n.nspname::pg_catalog.text) OPERATOR(pg_catalog.||) '.' \
                    OPERATOR(pg_catalog.||) pg_catalog.quote_ident(x.{name}::pg_catalog.text) \
             FROM pg_catalog.{catalog} x \
             JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) x.{namespace} \
             WHERE x.oid OPERATOR(pg_catalog.=) $1"
        ),
        &[oid.into()],
    )
    .ok()
    .flatten()
    .ok_or_else(|| format!("{catalog} {}", oid.to_u32()))
}

fn list(table: Oid, args: *mut pg_sys::List) -> Result<Vec<String>, String> {
    let args = unsafe { PgList::<pg_sys::Node>::from_pg(args) };
    args.iter_ptr().map(|arg| qualified(table, arg)).collect()
}

/// `expr` written out qualified down to its operators, casts and functions; `Err` names what
/// cannot be written so. One function a node kind, each only for its kind.
pub(super) fn qualified(table: Oid, expr: *mut pg_sys::Node) -> Result<String, String> {
    if expr.is_null() {
        return Err("an empty expression".into());
    }
    unsafe {
        match (*expr).type_ {
            NodeTag::T_Var => var(table, &*expr.cast()),
            NodeTag::T_Const => Ok(constant(&*expr.cast())),
            NodeTag::T_OpExpr => op_expr(table, &*expr.cast()),
            NodeTag::T_ScalarArrayOpExpr => scalar_array_op_expr(table, &*expr.cast()),
            NodeTag::T_FuncExpr => func_expr(table, &*expr.cast()),
            NodeTag::T_BoolExpr => bool_expr(table, &*expr.cast()),
            NodeTag::T_NullTest => null_test(table, &*expr.cast()),
            NodeTag::T_BooleanTest => boolean_test(table, &*expr.cast()),
            NodeTag::T_RelabelType => {
                let r: &pg_sys::RelabelType = &*expr.cast();
                let arg = qualified(table, r.arg.cast())?;
                Ok(format!(
                    "({arg})::{}",
                    type_name(r.resulttype, r.resulttypmod)
                ))
            }
            NodeTag::T_CoerceViaIO => {
                let c: &pg_sys::CoerceViaIO = &*expr.cast();
                let arg = qualified(table, c.arg.cast())?;
                Ok(format!("({arg})::{}", type_name(c.resulttype, -1)))
            }
            NodeTag::T_CollateExpr => collate_expr(table, &*expr.cast()),
            NodeTag::T_CoalesceExpr => {
                let c: &pg_sys::CoalesceExpr = &*expr.cast();
                Ok(format!("COALESCE({})", list(table, c.args)?.join(", ")))
            }
            NodeTag::T_ArrayExpr => array_expr(table, &*expr.cast()),
            other => {
                let kind = format!("{other:?}");
                Err(format!(
                    "this kind of expression ({})",
                    kind.trim_start_matches("T_")
                ))
            }
        }
    }
}

fn var(table: Oid, var: &pg_sys::Var) -> Result<String, String> {
    if var.varattno <= 0 {
        return Err("a system column or a whole-row reference".into());
    }
    Ok(quote_identifier(text(unsafe {
        pg_sys::get_attname(table, var.varattno, false)
    })))
}

fn constant(c: &pg_sys::Const) -> String {
    let typ = type_name(c.consttype, c.consttypmod);
    if c.constisnull {
        return format!("NULL::{typ}");
    }
    let mut output = pg_sys::InvalidOid;
    let mut varlena = false;
    let value = unsafe {
        pg_sys::getTypeOutputInfo(c.consttype, &mut output, &mut varlena);
        text(pg_sys::OidOutputFunctionCall(output, c.constvalue))
    };
    format!("{}::{typ}", quote_literal(&value))
}

fn op_expr(table: Oid, op: &pg_sys::OpExpr) -> Result<String, String> {
    let name = operator_name(op.opno)?;
    match list(table, op.args)?.as_slice() {
        [left, right] => Ok(format!("({left} OPERATOR({name}) {right})")),
        [arg] => Ok(format!("(OPERATOR({name}) {arg})")),
        _ => Err("an operator of this form".into()),
    }
}

fn scalar_array_op_expr(table: Oid, op: &pg_sys::ScalarArrayOpExpr) -> Result<String, String> {
    let name = operator_name(op.opno)?;
    let quantifier = if op.useOr { "ANY" } else { "ALL" };
    match list(table, op.args)?.as_slice() {
        [left, right] => Ok(format!("({left} OPERATOR({name}) {quantifier} ({right}))")),
        _ => Err("an operator of this form".into()),
    }
}

fn func_expr(table: Oid, func: &pg_sys::FuncExpr) -> Result<String, String> {
    let name = qualified_name("pg_proc", "proname", "pronamespace", func.funcid)?;
    let mut args = list(table, func.args)?;
    if func.funcvariadic {
        if let Some(last) = args.last_mut() {
            *last = format!("VARIADIC {last}");
        }
    }
    Ok(format!("{name}({})", args.join(", ")))
}

fn bool_expr(table: Oid, b: &pg_sys::BoolExpr) -> Result<String, String> {
    let args = list(table, b.args)?;
    Ok(match b.boolop {
        pg_sys::BoolExprType::AND_EXPR => format!("({})", args.join(" AND ")),
        pg_sys::BoolExprType::OR_EXPR => format!("({})", args.join(" OR ")),
        _ => format!("(NOT {})", args.join("")),
    })
}

fn null_test(table: Oid, t: &pg_sys::NullTest) -> Result<String, String> {
    let arg = qualified(table, t.arg.cast())?;
    Ok(match t.nulltesttype {
        pg_sys::NullTestType::IS_NULL => format!("({arg} IS NULL)"),
        _ => format!("({arg} IS NOT NULL)"),
    })
}

fn boolean_test(table: Oid, t: &pg_sys::BooleanTest) -> Result<String, String> {
    let arg = qualified(table, t.arg.cast())?;
    let test = match t.booltesttype {
        pg_sys::BoolTestType::IS_TRUE => "IS TRUE",
        pg_sys::BoolTestType::IS_NOT_TRUE => "IS NOT TRUE",
        pg_sys::BoolTestType::IS_FALSE => "IS FALSE",
        pg_sys::BoolTestType::IS_NOT_FALSE => "IS NOT FALSE",
        pg_sys::BoolTestType::IS_UNKNOWN => "IS UNKNOWN",
        _ => "IS NOT UNKNOWN",
    };
    Ok(format!("({arg} {test})"))
}

fn collate_expr(table: Oid, c: &pg_sys::CollateExpr) -> Result<String, String> {
    let arg = qualified(table, c.arg.cast())?;
    let collation = qualified_name("pg_collation", "collname", "collnamespace", c.collOid)?;
    Ok(format!("({arg} COLLATE {collation})"))
}

fn array_expr(table: Oid, a: &pg_sys::ArrayExpr) -> Result<String, String> {
    if a.multidims {
        return Err("a multidimensional ARRAY[…]".into());
    }
    Ok(format!(
        "ARRAY[{}]::{}",
        list(table, a.elements)?.join(", "),
        type_name(a.array_typeid, -1)
    ))
}
