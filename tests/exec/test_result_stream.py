"""exec/result_stream.py: which plans stream (the handoff between the query's thread and
its reader is io/read/prefetch.ReadAhead's push mode: tests/io/read/test_prefetch.py)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock.exec.result_stream import streams


@pytest.mark.parametrize("sql, expected", [
    ("SELECT a, b FROM t WHERE a > 1", True),
    ("SELECT t.a, u.c FROM t JOIN u ON t.a = u.a", True),
    ("SELECT a FROM t ORDER BY a", False),
    ("SELECT a FROM t LIMIT 2", False),
    ("SELECT b, count(*) FROM t GROUP BY b", False),
])
def test_plans_whose_last_pipeline_writes_the_result_stream(sql: str, expected: bool) -> None:
    db = penstock.connect(device="cpu", strict=True)
    db.register_arrow("t", pa.table({"a": [1, 2, 3], "b": ["x", "y", "x"]}))
    db.register_arrow("u", pa.table({"a": [1, 2], "c": [10.0, 20.0]}))
    compiled = db.prepare(sql).compiled
    assert compiled is not None
    assert streams(compiled.plan) is expected
