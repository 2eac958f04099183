"""Pages skipped with a file's page index (io/parquet/device/page_index.py).

One row group of rows sorted by key and time, written by pyarrow with its page index and
small pages, so row-group statistics refute nothing while most pages of a selective filter's
column are refuted. The answers must equal DuckDB's over the same file, and equal those of
the same data written without a page index; EXPLAIN ANALYZE must say pages were skipped. An
index that lies about its pages' rows must not change an answer.
"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.io.parquet.device import page_index, scan
from penstock.io.parquet.device.page_index import FileIndex, intersect, merge, positions
from penstock.io.stats import ColumnPredicate
from penstock.plan.types import from_arrow

ROWS = 30_000


def table() -> pa.Table:
    r = np.arange(ROWS)
    start = datetime.datetime(2026, 1, 1)
    return pa.table({
        "k": pa.array(r * 3, pa.int64()),  # sorted
        "ts": pa.array([start + datetime.timedelta(seconds=int(v) * 7) for v in r], pa.timestamp("us")),
        "day": pa.array([datetime.date(2026, 1, 1) + datetime.timedelta(days=int(v) // 500) for v in r]),
        "host": pa.array([f"host-{int(v) // 1000:03d}" for v in r]),  # sorted text
        "level": pa.array([None if v % 7 == 0 else ["info", "warn", "error"][v % 3] for v in r]),
        "amount": pa.array([decimal.Decimal(int(v) * 13 % 100_000).scaleb(-2) for v in r], pa.decimal128(12, 2)),
        "x": pa.array([None if v % 11 == 0 else float(v) * 0.5 for v in r], pa.float64()),
        "late": pa.array([None if v < ROWS // 2 else int(v) for v in r], pa.int32()),  # NULL pages first
        "sig": pa.array([None if v % 9 == 0 else int(v * 7919).to_bytes(24, "little") for v in r], pa.binary(24)),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("page_index")
    made = {}
    for name, index in (("indexed", True), ("plain", False)):
        path = folder / f"{name}.parquet"
        pq.write_table(table(), path, row_group_size=ROWS, data_page_size=2048, compression="snappy",
                       write_page_index=index)
        made[name] = path
    return made


QUERIES = [
    "SELECT count(*), sum(k), min(host), max(level) FROM t WHERE k BETWEEN 30000 AND 31500",
    "SELECT count(*), sum(x), count(level) FROM t WHERE ts >= TIMESTAMP '2026-01-02 00:00:00' "
    "AND ts < TIMESTAMP '2026-01-02 01:00:00'",
    "SELECT host, count(*), sum(amount) FROM t WHERE host = 'host-017' GROUP BY host",
    "SELECT count(*), min(k), max(k) FROM t WHERE day = DATE '2026-01-31' AND level = 'warn'",
    "SELECT count(*), sum(k) FROM t WHERE k < 600 OR k > 89000",
    "SELECT count(*) FROM t WHERE k = -5",
    "SELECT count(*), sum(late) FROM t WHERE late IS NOT NULL AND k < 46000",
    "SELECT count(*), max(k) FROM t WHERE late IS NULL AND k > 44000",
    "SELECT k, host, level, amount FROM t WHERE k IN (3, 45000, 89997) ORDER BY k",
    "SELECT count(*), sum(amount) FROM t WHERE amount < 5.00 AND k > 60000",
    "SELECT k, sig FROM t WHERE k BETWEEN 60000 AND 60100 ORDER BY k",
]


def rows(db: Any, sql: str) -> list[tuple[Any, ...]]:
    result = db.sql(sql).to_arrow()
    return list(zip(*[c.to_pylist() for c in result.columns]))


def duck(path: Path, sql: str) -> list[tuple[Any, ...]]:
    return duckdb.sql(sql.replace("FROM t", f"FROM read_parquet('{path}')")).fetchall()


def connect(path: Path, device: str = "cpu") -> Any:
    db = penstock.connect(device=device, parquet_decode="device", strict=True)
    db.register("t", path)
    return db


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_equal_duckdb_and_the_file_without_an_index(files: dict[str, Path], sql: str, device: str) -> None:
    expected = duck(files["indexed"], sql)
    assert rows(connect(files["indexed"], device), sql) == expected
    assert rows(connect(files["plain"], device), sql) == expected


def test_explain_analyze_counts_the_pages_skipped(files: dict[str, Path], device: str) -> None:
    sql = "SELECT count(*), sum(x) FROM t WHERE k BETWEEN 30000 AND 31500"
    lines = connect(files["indexed"], device).sql("EXPLAIN ANALYZE " + sql).to_arrow().column(0).to_pylist()
    read = next(s for s in lines if "read path:" in s)
    assert "page index:" in read and "pages skipped" in read, "\n".join(lines)
    skipped = int(read.split("page index: ")[1].split(" pages")[0])
    assert skipped > 10
    lines = connect(files["plain"]).sql("EXPLAIN ANALYZE " + sql).to_arrow().column(0).to_pylist()
    assert "page index:" not in next(s for s in lines if "read path:" in s)


def test_the_index_matches_the_pages_pyarrow_wrote(files: dict[str, Path]) -> None:
    meta = pq.ParquetFile(files["indexed"]).metadata
    index = FileIndex(files["indexed"], meta)
    assert index.has_index() and not FileIndex(files["plain"], pq.ParquetFile(files["plain"]).metadata).has_index()
    pages = index.chunk(0, 0, with_bounds=True)
    assert pages is not None and len(pages.offsets) > 20
    assert pages.first_rows[0] == 0 and (np.diff(pages.first_rows) > 0).all()
    # each page's bounds hold its rows' values (k = 3 * row)
    for (start, end), lo, hi in zip(pages.spans(), pages.mins, pages.maxs):
        assert int.from_bytes(lo, "little", signed=True) == 3 * start
        assert int.from_bytes(hi, "little", signed=True) == 3 * (end - 1)
    chunk = meta.row_group(0).column(0)
    assert pages.offsets[0] >= (chunk.dictionary_page_offset or chunk.data_page_offset)


def test_kept_rows_hold_every_matching_row(files: dict[str, Path]) -> None:
    meta = pq.ParquetFile(files["indexed"]).metadata
    names = list(table().column_names)
    types = [from_arrow(f.type) for f in table().schema]
    leaves = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
    for p, matches in ((ColumnPredicate(0, "ge", (60_000,)), lambda r: 3 * r >= 60_000),
                       (ColumnPredicate(3, "eq", ("host-005",)), lambda r: r // 1000 == 5),
                       (ColumnPredicate(7, "is_null"), lambda r: r < ROWS // 2)):
        skipper = page_index.PageSkipper.of(files["indexed"], meta, names, types, leaves, [p])
        kept = skipper.kept(0)
        assert kept is not None and 0 < sum(e - s for s, e in kept) < ROWS
        wanted = [r for r in range(ROWS) if matches(r)]
        assert intersect(kept, merge([(r, r + 1) for r in wanted])) == merge([(r, r + 1) for r in wanted])


def test_range_helpers() -> None:
    assert merge([(5, 7), (0, 2), (2, 4), (6, 9)]) == [(0, 4), (5, 9)]
    assert intersect([(0, 10), (20, 30)], [(5, 25)]) == [(5, 10), (20, 25)]
    assert positions([(10, 20), (40, 50)], [(12, 14), (40, 41)]).tolist() == [2, 3, 10]


@pytest.mark.parametrize("lie", ["one page's first row", "a page's offset", "a page's size"])
def test_an_index_that_lies_changes_no_answer(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                              lie: str, device: str) -> None:
    """A page that holds one row more than the index says, next to one that holds one row
    fewer: a run choosing one of them finds a count of values other than it was told and is
    decoded whole. Offsets or sizes that do not tile the chunk: the index is not used."""
    real = FileIndex._read_chunk
    lied = []

    def lying(self: FileIndex, group: int, leaf: int, with_bounds: bool) -> Any:
        pages = real(self, group, leaf, with_bounds)
        if pages is not None and leaf == 0:
            field = {"one page's first row": "first_rows", "a page's offset": "offsets", "a page's size": "sizes"}[lie]
            values = getattr(pages, field).copy()
            values[len(values) // 2] += 1
            setattr(pages, field, values)
            lied.append(leaf)
        return pages

    monkeypatch.setattr(FileIndex, "_read_chunk", lying)
    for sql in QUERIES:
        assert rows(connect(files["indexed"], device), sql) == duck(files["indexed"], sql), sql
    assert lied


def test_the_cpu_backend_reads_through_its_kernels_and_skips_pages(files: dict[str, Path],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """parquet_decode='auto' on the CPU backend decodes with its kernels (these files are
    below the size where 'auto' keeps pyarrow's reader: that size is set to 0 here), so a file
    with a page index has pages skipped; 'host' keeps pyarrow's reader, which reads every page."""
    monkeypatch.setattr(scan, "SMALL_SCAN_BYTES", 0)
    def read_path(path: Path, sql: str, decode: str = "auto") -> str:
        db = penstock.connect(device="cpu", strict=True, parquet_decode=decode)
        db.register("t", path)
        assert rows(db, sql) == duck(path, sql)
        lines = db.sql("EXPLAIN ANALYZE " + sql).to_arrow().column(0).to_pylist()
        return next(s for s in lines if "read path:" in s)

    selective = "SELECT count(*), sum(x) FROM t WHERE k BETWEEN 30000 AND 31500"
    assert "page index:" in read_path(files["indexed"], selective)
    assert "decoded on the device" in read_path(files["plain"], selective)
    assert "pyarrow" in read_path(files["indexed"], selective, decode="host")