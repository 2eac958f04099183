"""The bytea functions before DataFusion: their arguments cast to bytea in the text, and the
DataFusion UDFs the fallback engine runs (checked against numpy, NULLs, 22026)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from penstock.errors import QueryError
from penstock.frontend.binary_functions import binary_arguments
from penstock.frontend.session import Frontend, rewritten_sql


def test_arguments_are_cast_nested_and_strings_untouched() -> None:
    sql = "SELECT hamming_distance(sig, bitwise_xor(a, $1)), 'hamming_distance(x, y)' FROM t -- bit_count(z)"
    assert binary_arguments(sql) == (
        "SELECT hamming_distance(CAST((sig) AS BYTEA),CAST(( bitwise_xor(CAST((a) AS BYTEA),CAST(( $1) AS BYTEA)))"
        " AS BYTEA)), 'hamming_distance(x, y)' FROM t -- bit_count(z)")
    assert binary_arguments("SELECT t.bit_count FROM t") == "SELECT t.bit_count FROM t"
    assert binary_arguments("SELECT 1") == "SELECT 1"


def _fallback(sql: str, table: pa.Table) -> pa.Table:
    frontend = Frontend()
    frontend.fallback_ctx.register_record_batches("t", [table.to_batches()])
    planned_sql = rewritten_sql(sql)
    return frontend.fallback_ctx.sql(planned_sql).to_arrow_table()


def test_fallback_udfs_equal_numpy() -> None:
    rng = np.random.default_rng(4)
    matrix = rng.integers(0, 256, (50, 16), dtype=np.uint8)
    sig = pa.array([bytes(r) if i % 5 else None for i, r in enumerate(matrix)], pa.binary(16))
    table = pa.table({"id": pa.array(range(50), pa.int64()), "sig": sig})
    popcount = np.array([bin(i).count("1") for i in range(256)])
    q = matrix[3]
    got = _fallback("SELECT hamming_distance(sig, '\\x" + q.tobytes().hex() + "'::bytea) AS d, bit_count(sig) AS b,"
                    " bitwise_and(sig, sig) AS s FROM t ORDER BY id", table)
    assert got["d"].to_pylist() == [int(popcount[r ^ q].sum()) if i % 5 else None for i, r in enumerate(matrix)]
    assert got["b"].to_pylist() == [int(popcount[r].sum()) if i % 5 else None for i, r in enumerate(matrix)]
    assert got["s"].to_pylist() == sig.to_pylist()


def test_fallback_length_mismatch_is_22026() -> None:
    table = pa.table({"sig": pa.array([b"\x01\x02"], pa.binary(2))})
    frontend = Frontend()
    frontend.fallback_ctx.register_record_batches("t", [table.to_batches()])
    from penstock.frontend.errors.sql_errors import translate_error

    sql = "SELECT hamming_distance(CAST((sig) AS BYTEA), CAST((decode('01', 'hex')) AS BYTEA)) FROM t"
    with pytest.raises(Exception) as raised:
        frontend.fallback_ctx.sql(sql).to_arrow_table()
    error = translate_error(sql, raised.value)
    assert isinstance(error, QueryError) and error.sqlstate == "22026"
