"""Loading column values of the current row inside a kernel.

A source column is read at the pipeline's row variable; a build-side column is read at the
row its probe matched, which is NULL_ROW for an outer join's unmatched row. Columns keep
Arrow's layout: validity bitmap, bit-packed booleans, decimals of up to 18 digits read
as the low 64-bit word of a decimal128 (decimal_stride 2) or penstock's own int64 values
(stride 1), wider decimals as both words of a decimal128, text as offsets+data or
dictionary indices.
"""

from __future__ import annotations

from penstock.codegen.cpp_types import KEY_TEXT, STORAGE, scalar_type
from penstock.codegen.expr.generator import ExprGen, Val
from penstock.codegen.kernel import (DATA, DICT_DATA, DICT_HASHES, DICT_OFFSETS, DICT_RECORDS, STRIDE,
                                     VALIDITY, VALUES, BuildPart, InputPart, ParamTable, Role)
from penstock.plan.expr import BuildColumn, ColumnRef
from penstock.plan.types import DataType, Kind


class ColumnParams:
    """The kernel parameters of one column (source or build side)."""

    def __init__(self, params: ParamTable, t: DataType, role_of: "type[Role] | None" = None,
                 **role_args: int) -> None:
        self.params = params
        self.type = t
        self.role_args = role_args
        self.role_cls = role_of or InputPart

    def _get(self, part: str, cpp: str, ctype: str = "ptr") -> str:
        return self.params.get(self.role_cls(part=part, **self.role_args), cpp, ctype, "c")  # type: ignore[call-arg]

    def validity(self) -> str:
        return self._get(VALIDITY, "const uint8_t*")

    def value_array(self) -> str:
        """The values parameter of a fixed-width column."""
        return self._get(VALUES, f"const {STORAGE[self.type.kind]}*")

    def key_text_at(self, row: str) -> str:
        """A text column's value as a group key (xpu::KeyText)."""
        parts = [self._get(VALUES, "const int32_t*"), self._get(DATA, "const uint8_t*"),
                 self._get(DICT_OFFSETS, "const int32_t*"), self._get(DICT_DATA, "const uint8_t*"),
                 self._get(DICT_RECORDS, "const uint64_t*"), self._get(DICT_HASHES, "const uint64_t*")]
        return f"xpu::key_text({', '.join(parts)}, {row})"

    def value_at(self, row: str) -> str:
        t = self.type
        if t.kind is Kind.STRING:
            values = self._get(VALUES, "const int32_t*")
            data = self._get(DATA, "const uint8_t*")
            dict_offsets = self._get(DICT_OFFSETS, "const int32_t*")
            dict_data = self._get(DICT_DATA, "const uint8_t*")
            return f"xpu::text_at({values}, {data}, {dict_offsets}, {dict_data}, {row})"
        values = self.value_array()
        if t.kind is Kind.BINARY:
            return f"xpu::bytes_at({values}, {row}, {t.width})"
        if t.kind is Kind.BOOL:
            return f"xpu::get_bit({values}, {row})"
        if t.is_wide_decimal:
            return f"xpu::load_i128({values}, {row})"
        if t.kind is Kind.DECIMAL:
            stride = self._get(STRIDE, "int32_t", "i32")
            return f"{values}[{row} * {stride}]"
        if t.kind is Kind.NULL:
            return "false"
        return f"{values}[{row}]"


def load_input(g: ExprGen, e: ColumnRef, row: str, nullable: bool = True, value: str | None = None) -> Val:
    """A scanned column at `row`; `value`: where its value already is (a fixed-width column
    that a staged kernel's first step loaded ahead), instead of reading the column."""
    col = ColumnParams(g.params, e.type, column=e.index)
    return _load(g, col, row, guard_missing=False, nullable=nullable, value=value)


def load_build(g: ExprGen, e: BuildColumn, join: int, row: str, outer: bool = True,
               nullable: bool = True) -> Val:
    """A build-side column at the matched row; `outer`: the row may be NULL_ROW."""
    col = ColumnParams(g.params, e.type, BuildPart, join=join, column=e.index)
    return _load(g, col, row, guard_missing=outer, nullable=nullable or outer)


def load_key_text(g: ExprGen, col: ColumnParams, row: str, nullable: bool) -> Val:
    """A text column at `row` as a group key: an xpu::KeyText, which for a column the column
    cache dictionary-encoded is the entry's record, found without touching the text."""
    v, n = g.fresh()
    if not nullable:
        g.out.line(f"const {KEY_TEXT} {v} = {col.key_text_at(row)};")
        return Val(v, "false", col.type, KEY_TEXT)
    g.out.line(f"const bool {n} = xpu::is_null({col.validity()}, {row});")  # a NULL's index may point anywhere
    g.out.line(f"const {KEY_TEXT} {v} = {n} ? {KEY_TEXT}() : {col.key_text_at(row)};")
    return Val(v, n, col.type, KEY_TEXT)


def _load(g: ExprGen, col: ColumnParams, row: str, guard_missing: bool, nullable: bool,
          value: str | None = None) -> Val:
    t = col.type
    at = value or col.value_at(row)
    cpp = scalar_type(t)
    v, n = g.fresh()
    if t.kind is Kind.NULL:
        g.out.line(f"bool {v} = false;")
        return Val(v, "true", t, cpp)
    if not nullable and not guard_missing:  # a NOT NULL column: no validity to read
        g.out.line(f"const {cpp} {v} = {at};")
        return Val(v, "false", t, cpp)
    null = f"xpu::is_null({col.validity()}, {row})"
    if guard_missing:  # an outer join's unmatched row has no build row to read
        g.out.line(f"bool {n} = {row} < 0 || {null};")
        g.out.line(f"{cpp} {v} = {n} ? {cpp}() : ({cpp}){at};")
    elif t.kind is Kind.STRING:  # a NULL slot's dictionary index may point anywhere
        g.out.line(f"bool {n} = {null};")
        g.out.line(f"{cpp} {v} = {n} ? {cpp}() : {at};")
    else:
        g.out.line(f"bool {n} = {null};")
        g.out.line(f"{cpp} {v} = {at};")
    return Val(v, n, t, cpp)
