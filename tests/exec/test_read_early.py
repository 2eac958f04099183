"""Reading the largest table early (Executor.read_early): a query's last scan of a table the
column cache does not hold starts reading before the pipelines that precede it, so the
drive keeps working while the dimensions of a star join run. These tests check that it
starts, that answers are unchanged, that a memory cap turns it off, and that a query which
fails before the scan stops the reading thread. The CPU backend reads on the cores its
kernels use, so it reads early only where a test turns it on (`reading_beside`)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.exec.pipeline.runner import PipelineRunner

SQL = ("SELECT d.label, sum(f.v) AS s FROM f JOIN d ON f.k = d.k WHERE d.w < 50 "
       "GROUP BY d.label ORDER BY d.label")


def write(path: Path, table: pa.Table, batch: int = 5000) -> Path:
    with pa.ipc.new_file(path, table.schema) as out:
        for b in table.to_batches(max_chunksize=batch):
            out.write_batch(b)
    return path


def files(tmp_path: Path) -> tuple[Path, Path, pa.Table, pa.Table]:
    rng = np.random.default_rng(2)
    d = pa.table({"k": pa.array(range(300), pa.int64()), "w": pa.array(rng.integers(0, 100, 300)),
                  "label": [f"L{i % 4}" for i in range(300)]})
    f = pa.table({"k": pa.array(rng.integers(0, 300, 40000)), "v": pa.array(rng.integers(0, 1000, 40000))})
    return write(tmp_path / "f.arrow", f), write(tmp_path / "d.arrow", d), f, d


def reading_beside(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection's backend read as a GPU reads: beside its kernels."""
    monkeypatch.setattr(type(db.backend), "reads_beside_kernels", True)


def started_early(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    labels: list[str] = []
    original = PipelineRunner.read_early

    def spy(self: PipelineRunner) -> None:
        labels.append(self.p.label)
        original(self)

    monkeypatch.setattr(PipelineRunner, "read_early", spy)
    return labels


def test_the_fact_table_starts_reading_before_the_dimension_runs(
        device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fpath, dpath, f, d = files(tmp_path)
    db = penstock.connect(device=device, strict=True)
    db.register("f", str(fpath))
    db.register("d", str(dpath))
    reading_beside(db, monkeypatch)
    labels = started_early(monkeypatch)
    con = duckdb.connect()
    con.register("f", f)
    con.register("d", d)
    want = con.sql(SQL).fetchall()
    for _ in range(2):
        result = db.sql(SQL)
        assert [tuple(r.values()) for r in result.to_arrow().to_pylist()] == want
        assert result.metrics.pipelines[1].bytes_read == 2 * 8 * 40000  # all of it, through the early reader
    assert labels == ["scan f", "scan f"]


def test_a_memory_cap_turns_reading_early_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fpath, dpath, _, _ = files(tmp_path)
    db = penstock.connect(device="cpu", strict=True, gpu_memory_limit=1 << 30)
    db.register("f", str(fpath))
    db.register("d", str(dpath))
    reading_beside(db, monkeypatch)
    labels = started_early(monkeypatch)
    db.sql(SQL)
    assert labels == []


def test_the_cpu_backend_reads_when_the_scan_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the CPU backend reading is decoding on the kernels' own cores: nothing starts early."""
    fpath, dpath, _, _ = files(tmp_path)
    db = penstock.connect(device="cpu", strict=True)
    db.register("f", str(fpath))
    db.register("d", str(dpath))
    labels = started_early(monkeypatch)
    assert len(db.sql(SQL).to_arrow()) == 4
    assert labels == []


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "penstock-prefetch" and t.is_alive()]


def test_a_query_that_fails_before_the_scan_stops_its_reading(device: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    fpath, dpath, _, _ = files(tmp_path)
    db = penstock.connect(device=device, strict=True)
    db.register("f", str(fpath))
    db.register("d", str(dpath))
    reading_beside(db, monkeypatch)
    before = len(prefetch_threads())
    bad = ("SELECT sum(f.v) FROM f JOIN d ON f.k = d.k WHERE 100 / (d.w - d.w) > 1")
    with pytest.raises(QueryError) as err:
        db.sql(bad)
    assert err.value.sqlstate == "22012"
    deadline = time.monotonic() + 5
    while len(prefetch_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(prefetch_threads()) == before
    assert db.sql("SELECT count(*) AS n FROM f").to_arrow().column("n").to_pylist() == [40000]


