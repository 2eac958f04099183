"""Bytea parameters bound at run time: one plan serves every signature of the same length
(the plan cache hits, the answers follow each call's bytes, on the device and in the
fallback engine), short values stay constants, and the markers never reach an answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import penstock
from penstock.frontend.param_slots import MIN_BYTES, marker, runtime_values, shape, slot_params
from penstock.plan.expr import PARAM_SLOT_BASE

_POPCOUNT = np.array([bin(i).count("1") for i in range(256)])


def _db(tmp_path: Path) -> tuple[penstock.Connection, np.ndarray]:
    rng = np.random.default_rng(2)
    matrix = rng.integers(0, 256, (400, 16), dtype=np.uint8)
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"id": pa.array(range(400), pa.int64()),
                             "sig": pa.array([bytes(r) for r in matrix], pa.binary(16))}), path)
    db = penstock.connect(device="cpu")
    db.register("s", path)
    return db, matrix


def test_slots_shape_and_values() -> None:
    params = [b"\x01" * 16, 5, b"\x02" * 4]
    slotted = slot_params(params)
    assert slotted.planning == [marker(0, 16), 5, b"\x02" * 4]
    assert slotted.markers == {marker(0, 16): PARAM_SLOT_BASE}
    assert runtime_values(params) == {PARAM_SLOT_BASE: (b"\x01" * 16, False)}
    assert shape(params) == shape([b"\x07" * 16, 5, b"\x02" * 4]) != shape([b"\x07" * 17, 5, b"\x02" * 4])
    assert shape(params) != shape([b"\x01" * 16, 5, b"\x03" * 4])  # short values are the plan's constants
    assert len(marker(3, 1000)) == 1000 and MIN_BYTES == 8


def test_one_plan_serves_every_signature(tmp_path: Path) -> None:
    db, matrix = _db(tmp_path)
    sql = "SELECT id, hamming_distance(sig, $1) AS d FROM s ORDER BY d, id LIMIT 5"
    for n, row in enumerate((3, 77, 200)):
        query = matrix[row]
        result = db.sql(sql, [query.tobytes()])
        assert result.engine == "penstock-cpu"
        assert result.metrics is not None and result.metrics.plan_cache_hit == (n > 0)
        distance = _POPCOUNT[matrix ^ query].sum(axis=1)
        expected = sorted((int(d), i) for i, d in enumerate(distance))[:5]
        rows = result.to_arrow()
        assert list(zip(rows["d"].to_pylist(), rows["id"].to_pylist())) == expected
        assert rows["id"].to_pylist()[0] == row


def test_fallback_runs_with_the_calls_bytes(tmp_path: Path) -> None:
    db, matrix = _db(tmp_path)
    sql = "SELECT sig, count(*) AS c FROM s WHERE hamming_distance(sig, $1) < 40 GROUP BY sig ORDER BY sig"
    for row in (5, 9):
        result = db.sql(sql, [matrix[row].tobytes()])
        assert result.engine == "datafusion"  # bytea grouping keys
        distance = _POPCOUNT[matrix ^ matrix[row]].sum(axis=1)
        assert sorted(result.to_arrow()["sig"].to_pylist()) == sorted(bytes(matrix[i]) for i in np.flatnonzero(distance < 40))


def test_explain_names_the_parameter(tmp_path: Path) -> None:
    db, matrix = _db(tmp_path)
    text = db.explain("SELECT id FROM s ORDER BY hamming_distance(sig, $1) LIMIT 3", params=[matrix[0].tobytes()])
    assert "hamming_distance(#1, $1)" in text
