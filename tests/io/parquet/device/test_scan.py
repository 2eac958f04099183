"""Parquet decoded on the device, end to end: the same answers as pyarrow's path and as
DuckDB, the same row groups skipped by statistics, and EXPLAIN ANALYZE saying which path
read the table and which columns pyarrow read instead, and why.

The table spans ten row groups with a sorted key, so a filter on it lets the statistics
refute most groups; the device path (parquet_decode='device') must skip exactly the groups
the host path skips, and a result must not depend on which path read it.
"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock import PenstockError
from penstock.io.parquet.device import batch_decoder, scan

ROWS, GROUP = 20_000, 2_000


def table() -> pa.Table:
    k = list(range(ROWS))
    return pa.table({
        "k": pa.array(k, pa.int64()),  # sorted: row group statistics refute ranges
        "bucket": pa.array([f"b{r // GROUP:02d}" for r in k]),  # one value per row group
        "g": pa.array([None if r % 10 == 3 else f"group {r % 13}" for r in k]),
        "x": pa.array([None if r % 17 == 0 else r * 0.25 for r in k], pa.float64()),
        "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=r % 900) for r in k]),
        "m": pa.array([None if r % 11 == 0 else decimal.Decimal(r * 37 % 100_000).scaleb(-2) for r in k],
                      pa.decimal128(12, 2)),
        "i16": pa.array([r % 30_000 - 15_000 for r in k], pa.int16()),
        "b": pa.array([None if r % 19 == 0 else r % 3 == 0 for r in k]),
        "u": pa.array([4_000_000_000 - r for r in k], pa.uint32()),
    })


@pytest.fixture(scope="module")
def snappy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scan") / "t.parquet"
    pq.write_table(table(), path, row_group_size=GROUP, compression="snappy", data_page_size=8192)
    assert pq.ParquetFile(path).metadata.num_row_groups == 10
    return path


@pytest.fixture(scope="module")
def plain_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scan_plain") / "t.parquet"
    pq.write_table(table(), path, row_group_size=GROUP, compression="none", use_dictionary=False,
                   data_page_version="2.0")
    return path


def connect(mode: str, path: Path) -> Any:
    db = penstock.connect(device="cpu", parquet_decode=mode, strict=True)
    db.register("t", path)
    return db


@pytest.fixture(scope="module")
def dbs(snappy_file: Path) -> dict[str, Any]:
    return {mode: connect(mode, snappy_file) for mode in ("device", "host")}


def rows(db: Any, sql: str) -> list[tuple[Any, ...]]:
    """Result rows as tuples (by position: several columns may be named 'count')."""
    result = db.sql(sql).to_arrow()
    return list(zip(*[c.to_pylist() for c in result.columns]))


def duck(path: Path, sql: str) -> list[tuple[Any, ...]]:
    return duckdb.sql(sql.replace("FROM t", f"FROM read_parquet('{path}')")).fetchall()


def ordered(result: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows sorted with NULLs first (Decimal equals int, so sums of either kind compare)."""
    return sorted(result, key=lambda row: [(v is not None, v) for v in row])


def explain(db: Any, sql: str) -> list[str]:
    return list(db.sql("EXPLAIN ANALYZE " + sql).to_arrow().column(0).to_pylist())


def line(lines: list[str], start: str) -> str:
    found = [s.strip() for s in lines if s.strip().startswith(start)]
    assert len(found) == 1, "\n".join(lines)
    return found[0]


QUERIES = [
    "SELECT count(*) FROM t",
    "SELECT count(*), sum(x), min(k), max(k), count(g), sum(m) FROM t WHERE k >= 15000",
    "SELECT count(*), sum(m), min(g), max(day) FROM t WHERE bucket = 'b03'",
    "SELECT g, count(*), sum(k), min(day), max(m), sum(i16) FROM t GROUP BY g",
    "SELECT bucket, count(*), count(x), sum(x) FROM t WHERE k < 5000 OR k >= 19000 GROUP BY bucket",
    "SELECT k, g, x, m FROM t WHERE k > 12345 ORDER BY k LIMIT 7",
    "SELECT k, bucket, day FROM t ORDER BY k DESC LIMIT 3",
    "SELECT count(*), count(b), sum(u) FROM t WHERE b AND k < 3000",
    "SELECT g, count(*) FROM t WHERE g LIKE '%1%' AND k BETWEEN 4000 AND 9999 GROUP BY g",
    "SELECT count(*) FROM t WHERE k > 1000000",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_device_host_and_duckdb_agree(dbs: dict[str, Any], snappy_file: Path, sql: str) -> None:
    """Filters that skip row groups, GROUP BY over text (with a NULL group), LIMIT, count(*)
    and columns pyarrow reads for the device (b, u): one answer from all three."""
    device, host = rows(dbs["device"], sql), rows(dbs["host"], sql)
    assert ordered(device) == ordered(host)
    assert ordered(device) == ordered(duck(snappy_file, sql))
    if "ORDER BY" in sql:
        assert device == host  # in order, too


def test_the_whole_table_is_the_same_table(dbs: dict[str, Any], plain_file: Path) -> None:
    """Every column of every row, through the engine, in Arrow: device and host identical
    (types included), for snappy v1 and for uncompressed v2 pages."""
    sql = "SELECT * FROM t ORDER BY k"
    device = dbs["device"].sql(sql).to_arrow()
    assert device.num_rows == ROWS
    assert device.equals(dbs["host"].sql(sql).to_arrow())
    assert connect("device", plain_file).sql(sql).to_arrow().equals(device)


def test_a_limit_without_order(dbs: dict[str, Any]) -> None:
    """LIMIT alone: as many rows as asked, each one of the table's."""
    got = rows(dbs["device"], "SELECT k, bucket FROM t LIMIT 5")
    assert len(got) == 5 and len({k for k, _b in got}) == 5
    assert all(bucket == f"b{k // GROUP:02d}" for k, bucket in got)


@pytest.mark.parametrize("sql, read, skipped", [
    ("SELECT sum(x) FROM t WHERE k >= 15000", 3, 7),
    ("SELECT count(*), min(g) FROM t WHERE bucket = 'b03'", 1, 9),
    ("SELECT sum(m) FROM t WHERE k < 4000", 2, 8),
    ("SELECT count(*) FROM t WHERE k BETWEEN 6100 AND 9999 AND bucket >= 'b04'", 1, 9),  # groups 3, 4; then 4
    ("SELECT count(g) FROM t", 10, 0),
])
def test_statistics_skip_the_same_row_groups_on_both_paths(dbs: dict[str, Any], sql: str, read: int,
                                                           skipped: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """EXPLAIN ANALYZE's batch count: the device path reads only the groups the filter may
    match, exactly as many as the host path (one row group a batch here: the device path
    otherwise decodes consecutive row groups together)."""
    monkeypatch.setattr(batch_decoder, "BATCH_ROWS", 1)
    for mode, path_text in (("device", "Parquet decoded on the device"), ("host", "pyarrow parquet reader")):
        lines = explain(dbs[mode], sql)
        batches = line(lines, "batches:")
        expected = f"batches: {read} ({skipped} skipped by statistics)" if skipped else f"batches: {read} "
        assert batches.startswith(expected), f"{mode}: {batches}"
        assert path_text in line(lines, "read path:"), mode


def test_row_groups_decode_together(dbs: dict[str, Any]) -> None:
    """Without a filter the device path decodes the row groups in one batch, with each
    group's dictionaries (text stays dictionary-encoded across them) and the same answers."""
    sql = "SELECT bucket, count(*), sum(x), min(g) FROM t GROUP BY bucket ORDER BY bucket"
    assert line(explain(dbs["device"], sql), "batches:").startswith("batches: 1 ")
    assert rows(dbs["device"], sql) == rows(dbs["host"], sql)


def test_every_group_skipped(dbs: dict[str, Any]) -> None:
    """A filter no row group can match: no group is decoded, the count is 0."""
    lines = explain(dbs["device"], "SELECT count(*), sum(x) FROM t WHERE k < 0")
    assert line(lines, "batches:").startswith("batches: 0 (10 skipped by statistics)")
    assert rows(dbs["device"], "SELECT count(*) FROM t WHERE k < 0") == [(0,)]


def test_explain_names_the_read_path_and_the_fallback_columns(dbs: dict[str, Any], plain_file: Path) -> None:
    """The device path says where pages were decompressed, and names each column pyarrow
    read instead with its reason; a table of supported columns names none."""
    read = line(explain(dbs["device"], "SELECT sum(u), count(b), sum(x) FROM t WHERE b"), "read path:")
    assert read.startswith("read path: Parquet decoded on the device (read from the page cache into host memory; "
                           "decompressed on the host); read by pyarrow: ")
    fallbacks = read.split("; read by pyarrow: ")[1]
    assert fallbacks.split(", ") == ["u (INT32 as uint32)"]  # booleans are decoded on the device

    read = line(explain(dbs["device"], "SELECT sum(x), count(g), max(m) FROM t"), "read path:")
    assert read == ("read path: Parquet decoded on the device (read from the page cache into host memory; "
                    "decompressed on the host)")
    read = line(explain(connect("device", plain_file), "SELECT sum(x), count(g) FROM t"), "read path:")
    assert read == "read path: Parquet decoded on the device (read from the page cache into host memory)"
    read = line(explain(dbs["host"], "SELECT sum(x), count(b) FROM t"), "read path:")
    assert read == "read path: pyarrow parquet reader, then copy"


def test_auto_decodes_with_the_kernels_on_the_cpu(snappy_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'auto' decodes with the device's kernels on the CPU backend too (faster than pyarrow's
    reader there) once a scan reads SMALL_SCAN_BYTES; below that, and with 'host', pyarrow's
    reader does (the kernels' path has a fixed cost a few pages do not repay)."""
    meta = pq.ParquetFile(snappy_file).metadata
    x = pq.ParquetFile(snappy_file).schema_arrow.names.index("x")
    stored = sum(meta.row_group(g).column(x).total_compressed_size for g in range(meta.num_row_groups))
    assert stored < scan.SMALL_SCAN_BYTES
    db = connect("auto", snappy_file)
    assert "pyarrow parquet reader" in line(explain(db, "SELECT sum(x) FROM t"), "read path:")
    monkeypatch.setattr(scan, "SMALL_SCAN_BYTES", stored)
    db = connect("auto", snappy_file)
    assert "Parquet decoded on the device" in line(explain(db, "SELECT sum(x) FROM t"), "read path:")
    db = connect("host", snappy_file)
    assert "pyarrow parquet reader" in line(explain(db, "SELECT sum(x) FROM t"), "read path:")


def test_an_unknown_setting_is_refused() -> None:
    with pytest.raises(PenstockError, match="parquet_decode='bogus'.*auto, device, host") as e:
        penstock.connect(device="cpu", parquet_decode="bogus")
    assert type(e.value) is PenstockError


def test_a_text_column_that_stays_dictionary_encoded(tmp_path: Path) -> None:
    """A text column whose every page indexes the dictionary reaches the engine as
    dictionary indices: grouping, comparing and returning it must treat it as text."""
    path = tmp_path / "dict.parquet"
    words = ["alpha", "beta", None, "gamma", "", "delta"]
    pq.write_table(pa.table({"w": [words[r % 6] for r in range(6000)], "v": pa.array(range(6000), pa.int64())}), path,
                   row_group_size=1000)
    from penstock.device import get_backend
    from penstock.io.parquet.device.decoder import RowGroupDecoder
    from penstock.plan.types import STRING, INT64

    decoder = RowGroupDecoder(get_backend("cpu"), path, pq.ParquetFile(path), ["w", "v"], [STRING, INT64])
    assert decoder.decode(3).columns[0].dict_offsets is not None  # indices into the dictionary, as stored
    device, host = connect("device", path), connect("host", path)
    for sql in ["SELECT w, count(*), sum(v) FROM t GROUP BY w", "SELECT count(*) FROM t WHERE w = 'gamma'",
                "SELECT min(w), max(w), count(w) FROM t", "SELECT w FROM t WHERE v IN (0, 4, 2, 3)"]:
        assert ordered(rows(device, sql)) == ordered(rows(host, sql)) == ordered(duck(path, sql)), sql


def test_every_decoded_type_end_to_end(tmp_path: Path, same_column: Any) -> None:
    """SELECT * through the engine from a file of every type the device decodes (NaN and
    infinities among the floats, timestamps in each unit, decimals in 4 and 8 bytes):
    the device path returns the written table, as the host path does."""
    n = 3000

    def maybe(value: Any, r: int) -> Any:
        return None if r % 7 == 0 else value
    written = pa.table({
        "i8": pa.array([maybe(r % 256 - 128, r) for r in range(n)], pa.int8()),
        "i16": pa.array([maybe(r * 7 % 65536 - 32768, r) for r in range(n)], pa.int16()),
        "i32": pa.array([maybe(r * 100_003 - 2**30, r) for r in range(n)], pa.int32()),
        "f32": pa.array([maybe(r / 3 if r % 50 else float("nan"), r) for r in range(n)], pa.float32()),
        "f64": pa.array([maybe(-r / 7 if r % 51 else float("-inf"), r) for r in range(n)], pa.float64()),
        "ts_ms": pa.array([maybe(r * 86_400_123, r) for r in range(n)], pa.int64()).cast(pa.timestamp("ms")),
        "ts_us": pa.array([maybe(r * 86_400_123_456, r) for r in range(n)], pa.int64()).cast(pa.timestamp("us")),
        "ts_ns": pa.array([maybe(r * 86_400_123_456_789, r) for r in range(n)], pa.int64()).cast(pa.timestamp("ns")),
        "d9": pa.array([maybe(decimal.Decimal(r * 12345 - 10**7).scaleb(-2), r) for r in range(n)],
                       pa.decimal128(9, 2)),
        "d18": pa.array([maybe(decimal.Decimal(r * 10**13 - 10**16).scaleb(-4), r) for r in range(n)],
                        pa.decimal128(18, 4)),
        "s": pa.array([maybe("é" * (r % 5) + str(r % 37), r) for r in range(n)]),
    })
    path = tmp_path / "types.parquet"
    pq.write_table(written, path, row_group_size=700, data_page_size=1024, write_batch_size=100)
    device = connect("device", path).sql("SELECT * FROM t").to_arrow()
    host = connect("host", path).sql("SELECT * FROM t").to_arrow()
    assert device.schema == host.schema == written.schema
    for name in written.column_names:
        same_column(device.column(name).combine_chunks(), written.column(name), f"device {name}")
        same_column(host.column(name).combine_chunks(), written.column(name), f"host {name}")


def test_runs_read_ahead_across_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table of one-group files reads its next files' runs while decoding this one (the
    read-ahead reached no further than the file it was in), and answers as pyarrow's path
    and DuckDB do; a filter refuting some files' groups skips them on the way."""
    import threading
    import time

    from penstock.io.parquet.device import scan

    monkeypatch.setattr(scan, "READ_AHEAD", 3)
    running, most = [0], [0]
    lock = threading.Lock()
    real = batch_decoder.BatchDecoder.read

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        try:
            return real(self, *args, **kwargs)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(batch_decoder.BatchDecoder, "read", counted)
    whole = table()
    for k in range(8):
        pq.write_table(whole.slice(k * 2_500, 2_500), tmp_path / f"part-{k}.parquet", compression="snappy")
    sql = "SELECT count(*) AS n, sum(k) AS s, count(g) AS gs, min(day) AS d FROM t WHERE k >= 4000"
    answers = {}
    for mode in ("device", "host"):
        db = penstock.connect(device="cpu", parquet_decode=mode, strict=True)
        db.register("t", tmp_path)
        answers[mode] = db.sql(sql).to_arrow().to_pylist()
    con = duckdb.connect()
    con.register("t", whole)
    n, s, gs, d = con.sql(sql).fetchall()[0]
    assert answers["device"] == answers["host"] == [{"n": n, "s": s, "gs": gs, "d": d}]
    assert most[0] > 1  # runs of different files read at once
