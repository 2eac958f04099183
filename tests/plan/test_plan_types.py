"""T.supertype (plan/types.py): the one type for values penstock types apart where DataFusion
coerced them alike (a CASE's branches, coalesce's arguments, a UNION's columns)."""

from __future__ import annotations

import pyarrow as pa

from penstock.plan import types as T
from penstock.plan.rel import Field, UnionAll, Values


def test_a_supertype_only_where_penstock_types_apart() -> None:
    us, ns = T.timestamp("us"), T.timestamp("ns")
    assert T.supertype([T.INT64, T.decimal(38, 0)]) == T.decimal(38, 0)  # sum(bigint) beside a bigint
    assert T.supertype([T.INT32, T.INT64, T.NULL]) == T.INT64  # date - date beside a bigint
    assert T.supertype([T.DATE, us]) == us  # date + interval beside a date
    assert T.supertype([us, ns, T.DATE]) == ns
    assert T.supertype([T.FLOAT32, T.FLOAT64, T.NULL]) == T.FLOAT64  # real + 1 beside a real
    assert T.supertype([T.FLOAT32, T.FLOAT32]) is None
    assert T.supertype([T.INT32, T.INT32]) is None and T.supertype([T.DATE, T.DATE]) is None
    assert T.supertype([T.DATE, T.INT32]) is None and T.supertype([T.NULL]) is None


def test_a_union_of_a_date_and_a_timestamp_is_a_timestamp() -> None:
    def values(t: T.DataType) -> Values:
        return Values(pa.table({"x": pa.array([], T.to_arrow(t))}), [Field("x", t)])

    assert [f.type for f in UnionAll([values(T.DATE), values(T.timestamp("us"))]).fields] == [T.timestamp("us")]
    assert [f.type for f in UnionAll([values(T.DATE), values(T.DATE)]).fields] == [T.DATE]
