"""C++ types of values in generated kernels.

Text values have static C++ types that describe how they were computed (xpu::StrView for a
column, xpu::Upper<xpu::StrView> for upper(column), ...), so `text_type` mirrors what the
text handlers generate; CASE and COALESCE need it to declare their result before
generating their branches.
"""

from __future__ import annotations

from penstock.errors import Unsupported
from penstock.plan.expr import BuildColumn, Call, Case, Cast, ColumnRef, Expr, Literal, Param
from penstock.plan.types import DataType, Kind

STRVIEW = "xpu::StrView"
KEY_TEXT = "xpu::KeyText"  # a text group key: a dictionary record's address, or the text
SMALLTEXT = "xpu::SmallText"

_SCALAR = {
    Kind.NULL: "bool", Kind.BOOL: "bool", Kind.INT8: "int8_t", Kind.INT16: "int16_t",
    Kind.INT32: "int32_t", Kind.INT64: "int64_t", Kind.FLOAT32: "float", Kind.FLOAT64: "double",
    Kind.DECIMAL: "int64_t", Kind.DATE: "int32_t", Kind.TIMESTAMP: "int64_t",
}

# What an Arrow values buffer holds per element, as C++ (bools are bit-packed).
STORAGE = {
    Kind.INT8: "int8_t", Kind.INT16: "int16_t", Kind.INT32: "int32_t", Kind.INT64: "int64_t",
    Kind.FLOAT32: "float", Kind.FLOAT64: "double", Kind.DECIMAL: "int64_t", Kind.DATE: "int32_t",
    Kind.TIMESTAMP: "int64_t", Kind.BOOL: "uint8_t", Kind.STRING: "int32_t", Kind.NULL: "uint8_t",
    Kind.BINARY: "uint8_t",  # fixed_size_binary: `width` bytes a row
}

INT_LIMITS = {
    Kind.INT8: ("INT8_MIN", "INT8_MAX"), Kind.INT16: ("INT16_MIN", "INT16_MAX"),
    Kind.INT32: ("INT32_MIN", "INT32_MAX"), Kind.INT64: ("INT64_MIN", "INT64_MAX"),
}


INT128 = "xpu::int128_t"


def scalar_type(t: DataType) -> str:
    """C++ type of a value (text and bytea: a view of its bytes)."""
    if t.kind in (Kind.STRING, Kind.BINARY):
        return STRVIEW
    if t.is_wide_decimal:
        return INT128
    try:
        return _SCALAR[t.kind]
    except KeyError:
        raise Unsupported(f"values of type {t} in a kernel") from None


def per_second(t: DataType) -> int:
    return {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]


_SLICING = ("substr", "btrim", "ltrim", "rtrim", "left", "right")


def text_type(e: Expr) -> str:
    """The C++ type the text handlers produce for text expression `e`."""
    if isinstance(e, (ColumnRef, BuildColumn, Literal, Param)):
        return STRVIEW
    if isinstance(e, Cast):
        return text_type(e.arg) if e.arg.type.kind is Kind.STRING else SMALLTEXT
    if isinstance(e, Case):
        branches = [v for _, v in e.whens] + ([e.otherwise] if e.otherwise is not None else [])
        return common_text_type([text_type(b) for b in branches])
    if isinstance(e, Call):
        if e.fn == "upper":
            return f"xpu::Upper<{text_type(e.args[0])}>"
        if e.fn == "lower":
            return f"xpu::Lower<{text_type(e.args[0])}>"
        if e.fn in _SLICING:
            inner = text_type(e.args[0])
            return STRVIEW if inner == STRVIEW else f"xpu::Slice<{inner}>"
        if e.fn == "str_concat":
            return concat_type([text_type(a) for a in e.args])
        if e.fn == "concat":
            return concat_type([text_type(a) if never_null(a) else f"xpu::Either<{text_type(a)}, {STRVIEW}>"
                                for a in e.args])
        if e.fn in ("lpad", "rpad"):
            fill = text_type(e.args[2]) if len(e.args) > 2 else STRVIEW
            return f"xpu::Pad<{text_type(e.args[0])}, {fill}>"
        if e.fn == "replace":
            return f"xpu::Replace<{', '.join(text_type(a) for a in e.args)}>"
        if e.fn == "concat_ws":
            return concat_type([concat_ws_piece(text_type(e.args[0]), text_type(a)) for a in e.args[1:]])
        if e.fn == "coalesce":
            return common_text_type([text_type(a) for a in e.args])
        if e.fn == "nullif":
            return text_type(e.args[0])
    raise Unsupported(f"text expression {e}")


def common_text_type(types: list[str]) -> str:
    """One type that can hold any of `types`: itself if they agree, else nested Eithers."""
    unique: list[str] = []
    for t in types:
        if t not in unique:
            unique.append(t)
    if len(unique) == 1:
        return unique[0]
    return f"xpu::Either<{unique[0]}, {common_text_type(unique[1:])}>"


def concat_type(parts: list[str]) -> str:
    if len(parts) == 1:
        return parts[0]
    return f"xpu::Concat<{parts[0]}, {concat_type(parts[1:])}>"


def concat_ws_piece(sep: str, arg: str) -> str:
    """Type of one argument's part of concat_ws: nothing, the argument, or separator + it."""
    return f"xpu::Either<xpu::Either<{arg}, xpu::Concat<{sep}, {arg}>>, {STRVIEW}>"


def never_null(e: Expr) -> bool:
    return isinstance(e, Literal) and e.value is not None
