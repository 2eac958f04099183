"""exec/result_stream.py: which plans stream, and the handoff between the query's thread and
its reader: bounded (a slow reader holds the query back), errors reach the reader, and a
reader that stops stops the producer."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.exec.result_stream import QUEUE_BATCHES, Handoff, streams


def test_a_slow_reader_holds_the_producer_back() -> None:
    handoff = Handoff()
    made: list[int] = []

    def produce() -> str:
        for i in range(50):
            handoff.put(pa.table({"i": [i]}))
            made.append(i)
        return "end"

    items = handoff.batches()
    handoff.run(produce)
    assert next(items)[0] == "batch"
    time.sleep(0.4)  # the producer could make all 50 in this time if nothing held it back
    assert len(made) <= 1 + QUEUE_BATCHES + 1
    rest = list(items)
    assert [k for k, _ in rest].count("batch") == 49 and rest[-1] == ("done", "end")


def test_an_error_reaches_the_reader_after_the_batches_before_it() -> None:
    handoff = Handoff()

    def produce() -> None:
        handoff.put(pa.table({"i": [1]}))
        raise QueryError("division by zero", "22012")

    handoff.run(produce)
    items = handoff.batches()
    assert next(items)[0] == "batch"
    with pytest.raises(QueryError, match="division by zero"):
        next(items)


def test_a_reader_that_stops_stops_the_producer() -> None:
    handoff = Handoff()
    stopped = threading.Event()

    def produce() -> None:
        try:
            while True:
                handoff.put(pa.table({"i": [1]}))
        except QueryError:
            stopped.set()
            raise

    handoff.run(produce)
    items = handoff.batches()
    next(items)
    items.close()
    assert stopped.wait(5)


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
