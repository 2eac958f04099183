"""The eight TPC-H tables: their Arrow schemas and dbgen's row counts.

Why a schema of our own rather than whatever the generator writes: tpchgen-cli writes text
as ``string_view`` and tags every field with a Parquet field id, and CSV carries no types at
all. Every format penstock writes gets exactly these schemas, so the same query sees the
same types whether the tables are Parquet, Arrow IPC or CSV. The types are tpchgen's (and so
dbgen's): int64 keys, int32 small integers, decimal(15,2) money and quantities, date32 dates,
plain ``string`` text; no column is nullable (TPC-H has no NULLs).
"""

from __future__ import annotations

import pyarrow as pa

# Dependency order, smallest first: a run shows progress at once and fails early.
TABLES: tuple[str, ...] = (
    "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
)

_KEY = pa.int64()
_INT = pa.int32()
_MONEY = pa.decimal128(15, 2)
_DATE = pa.date32()
_TEXT = pa.string()


def _schema(*columns: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, kind, nullable=False) for name, kind in columns])


SCHEMAS: dict[str, pa.Schema] = {
    "region": _schema(("r_regionkey", _KEY), ("r_name", _TEXT), ("r_comment", _TEXT)),
    "nation": _schema(("n_nationkey", _KEY), ("n_name", _TEXT), ("n_regionkey", _KEY),
                      ("n_comment", _TEXT)),
    "supplier": _schema(("s_suppkey", _KEY), ("s_name", _TEXT), ("s_address", _TEXT),
                        ("s_nationkey", _KEY), ("s_phone", _TEXT), ("s_acctbal", _MONEY),
                        ("s_comment", _TEXT)),
    "customer": _schema(("c_custkey", _KEY), ("c_name", _TEXT), ("c_address", _TEXT),
                        ("c_nationkey", _KEY), ("c_phone", _TEXT), ("c_acctbal", _MONEY),
                        ("c_mktsegment", _TEXT), ("c_comment", _TEXT)),
    "part": _schema(("p_partkey", _KEY), ("p_name", _TEXT), ("p_mfgr", _TEXT),
                    ("p_brand", _TEXT), ("p_type", _TEXT), ("p_size", _INT),
                    ("p_container", _TEXT), ("p_retailprice", _MONEY), ("p_comment", _TEXT)),
    "partsupp": _schema(("ps_partkey", _KEY), ("ps_suppkey", _KEY), ("ps_availqty", _INT),
                        ("ps_supplycost", _MONEY), ("ps_comment", _TEXT)),
    "orders": _schema(("o_orderkey", _KEY), ("o_custkey", _KEY), ("o_orderstatus", _TEXT),
                      ("o_totalprice", _MONEY), ("o_orderdate", _DATE),
                      ("o_orderpriority", _TEXT), ("o_clerk", _TEXT),
                      ("o_shippriority", _INT), ("o_comment", _TEXT)),
    "lineitem": _schema(("l_orderkey", _KEY), ("l_partkey", _KEY), ("l_suppkey", _KEY),
                        ("l_linenumber", _INT), ("l_quantity", _MONEY),
                        ("l_extendedprice", _MONEY), ("l_discount", _MONEY), ("l_tax", _MONEY),
                        ("l_returnflag", _TEXT), ("l_linestatus", _TEXT),
                        ("l_shipdate", _DATE), ("l_commitdate", _DATE),
                        ("l_receiptdate", _DATE), ("l_shipinstruct", _TEXT),
                        ("l_shipmode", _TEXT), ("l_comment", _TEXT)),
}

# Rows per unit of scale factor (TPC-H specification 4.2.5); region and nation are fixed.
_PER_SF: dict[str, int] = {
    "supplier": 10_000, "customer": 150_000, "part": 200_000, "partsupp": 800_000,
    "orders": 1_500_000,
}
_FIXED: dict[str, int] = {"region": 5, "nation": 25}
LINES_PER_ORDER = 4  # 1..7 lines per order, uniform: lineitem is about 4 x orders


def table_rows(table: str, sf: float) -> int:
    """dbgen's row count of ``table`` at scale ``sf`` (lineitem: the expected count).

    Counts truncate as dbgen's do (SF 0.0033 has 33 suppliers); partsupp is 4 rows per part.
    Lineitem's count is random (1..7 lines per order), so only its expectation is known.
    """
    if table in _FIXED:
        return _FIXED[table]
    if table == "lineitem":
        return LINES_PER_ORDER * table_rows("orders", sf)
    if table == "partsupp":
        return 4 * table_rows("part", sf)
    return int(_PER_SF[table] * sf)
