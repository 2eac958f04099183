"""EXTRACT / date_part, date_trunc and date arithmetic on dates (days) and timestamps."""

from __future__ import annotations

from penstock.codegen.cpp_types import per_second, scalar_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.errors import Unsupported
from penstock.plan import types as T
from penstock.plan.expr import Call, Literal
from penstock.plan.types import DataType, Kind

# in kernels/dates.h's order (PART_YEAR = 0, ...): the plan interpreter passes the position
PARTS = {"year": "PART_YEAR", "quarter": "PART_QUARTER", "month": "PART_MONTH", "day": "PART_DAY",
          "hour": "PART_HOUR", "minute": "PART_MINUTE", "second": "PART_SECOND",
          "millisecond": "PART_MILLISECOND", "microsecond": "PART_MICROSECOND", "dow": "PART_DOW",
          "doy": "PART_DOY", "week": "PART_WEEK", "isodow": "PART_ISODOW"}
_TRUNCS = {"year": "TRUNC_YEAR", "quarter": "TRUNC_QUARTER", "month": "TRUNC_MONTH",
           "week": "TRUNC_WEEK", "day": "TRUNC_DAY", "hour": "TRUNC_HOUR", "minute": "TRUNC_MINUTE",
           "second": "TRUNC_SECOND"}
_DAY = 86_400


def as_timestamp(a: Val) -> tuple[str, int]:
    """(C++ timestamp value, units per second) for a date or timestamp."""
    if a.type.kind is Kind.DATE:
        return f"((int64_t){a.v} * {_DAY}LL)", 1
    return a.v, per_second(a.type)


def compile_date_part(g: ExprGen, e: Call) -> Val:
    field = e.fn.split(".", 1)[1]
    a = g.compile(e.args[0])
    ts, unit = as_timestamp(a)
    cpp = scalar_type(e.type)
    if field == "epoch":
        value = f"({cpp})((double){ts} / {float(unit)})"
    elif e.type.is_float:  # second, millisecond, microsecond keep the fraction
        value = f"({cpp})xpu::time_part_fraction({ts}, {unit}LL, xpu::{PARTS[field]})"
    else:
        value = f"({cpp})xpu::time_part({ts}, {unit}LL, xpu::{PARTS[field]})"
    return g.strict(e.type, [a], value)


def compile_date_trunc(g: ExprGen, e: Call) -> Val:
    unit_name = e.fn.split(".", 1)[1]
    a = g.compile(e.args[0])
    if e.type.kind is not Kind.TIMESTAMP:
        raise Unsupported(f"date_trunc returning {e.type}")
    ts, unit = as_timestamp(a)
    out = per_second(e.type)
    value = f"xpu::trunc_timestamp({ts}, {unit}LL, xpu::{_TRUNCS[unit_name]})"
    if out != unit:
        value = f"({value} * {out // unit}LL)" if out > unit else f"({value} / {unit // out}LL)"
    return g.strict(e.type, [a], value)


def compile_add_interval(g: ExprGen, e: Call) -> Val:
    """date/timestamp + a constant interval of (months, microseconds)."""
    base = g.compile(e.args[0])
    months, micros = e.args[1], e.args[2]
    assert isinstance(months, Literal) and isinstance(micros, Literal)
    m, us = g.compile(months), g.compile(micros)
    t = e.type
    if base.type.kind is Kind.DATE and t.kind is Kind.DATE:
        value = f"(int32_t)(xpu::add_months({base.v}, {m.v}) + {us.v} / 86400000000LL)"
        return g.strict(t, [base], value)
    if base.type.kind is Kind.DATE and t == T.timestamp("us"):  # date + interval, in the interpreter's steps
        day = f"(int64_t)(int32_t)xpu::add_months({base.v}, {m.v})"  # a date, as its ADD_MONTHS keeps it
        midnight = f"xpu::mul_checked<int64_t>({day}, 86400000000LL, {g.err})"
        return g.strict(t, [base], f"xpu::add_checked<int64_t>({midnight}, {us.v}, {g.err})")
    ts, unit = as_timestamp(base)
    if t.kind is not Kind.TIMESTAMP:
        raise Unsupported(f"interval arithmetic producing {t}")
    out = per_second(t)
    if out != unit:
        ts = f"({ts} * {out // unit}LL)" if out > unit else f"({ts} / {unit // out}LL)"
    return g.strict(t, [base], f"xpu::timestamp_add({ts}, {out}LL, {m.v}, {us.v})")


def date_arithmetic(g: ExprGen, e: Call, a: Val, b: Val) -> Val:
    ka, kb = a.type.kind, b.type.kind
    t: DataType = e.type
    if e.fn in ("add", "sub") and ka is Kind.DATE and b.type.is_integer and t.kind is Kind.DATE:
        op = "add_checked" if e.fn == "add" else "sub_checked"
        return g.strict(t, [a, b], f"(int32_t)xpu::{op}<int64_t>({a.v}, (int64_t){b.v}, {g.err})")
    if e.fn == "add" and a.type.is_integer and kb is Kind.DATE and t.kind is Kind.DATE:
        return g.strict(t, [a, b], f"(int32_t)xpu::add_checked<int64_t>({b.v}, (int64_t){a.v}, {g.err})")
    if e.fn == "sub" and ka is Kind.DATE and kb is Kind.DATE and t.is_integer:
        return g.strict(t, [a, b], f"({scalar_type(t)})((int64_t){a.v} - (int64_t){b.v})")
    raise Unsupported(f"{e.fn} of {a.type} and {b.type} producing {t}")


HANDLERS = {
    "date_part": compile_date_part, "date_trunc": compile_date_trunc,
    "add_interval": compile_add_interval,
}
