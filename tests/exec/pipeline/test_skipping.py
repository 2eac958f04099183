"""Parquet row groups skipped by their statistics.

Skipping is only an optimisation, so every query is checked twice: its answer must equal
DuckDB's over the same file (a group skipped wrongly loses rows), and EXPLAIN ANALYZE must
report exactly the row groups that the statistics rule out (a group not skipped is wasted
work). The data is sorted, so each row group covers one narrow range of every column.
"""

from __future__ import annotations

import datetime
import decimal
import re
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.io.parquet.device import batch_decoder

ROWS = 1000
GROUP_ROWS = 100  # ten row groups: group g holds i = 100g .. 100g + 99
GROUPS = ROWS // GROUP_ROWS
BASE_NS = 1_600_000_000_000_000_000  # 2020-09-13 12:26:40 UTC
QUERY = "SELECT count(*) AS c, sum(i) AS s, min(s) AS lo FROM k WHERE {}"


@pytest.fixture(autouse=True)
def one_row_group_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The device's Parquet decoder reads one row group a batch here, so EXPLAIN's batch
    count is the row groups read (it otherwise decodes consecutive row groups together)."""
    monkeypatch.setattr(batch_decoder, "BATCH_ROWS", 1)


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request: pytest.FixtureRequest) -> str:
    """Each test runs on the CPU backend, and on the GPU under `pytest -m gpu`."""
    return str(request.param)


def n_value(i: int) -> int | None:
    """Row groups 3 and 7 are all NULL, group 5 is half NULL, the rest have no NULLs."""
    group = i // GROUP_ROWS
    if group in (3, 7) or (group == 5 and i % 2):
        return None
    return i


def data(rows: int = ROWS) -> pa.Table:
    i = range(rows)
    return pa.table({
        "i": pa.array(i, pa.int64()),
        "i32": pa.array([x // 10 for x in i], pa.int32()),
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=x) for x in i]),
        "m": pa.array([decimal.Decimal(x) * decimal.Decimal("1.25") for x in i], pa.decimal128(12, 2)),
        "s": pa.array([f"k{x:04d}" for x in i]),
        "f": pa.array([x * 0.5 for x in i], pa.float64()),
        "n": pa.array([n_value(x) for x in i], pa.int64()),
        # 500 ns past each whole microsecond: statistics must keep the nanoseconds
        "ts": pa.array([BASE_NS + x * 1000 + 500 for x in i], pa.timestamp("ns")),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("skipping")
    table = data()
    paths = {"stats": root / "stats.parquet", "nostats": root / "nostats.parquet"}
    pq.write_table(table, paths["stats"], row_group_size=GROUP_ROWS)
    pq.write_table(table, paths["nostats"], row_group_size=GROUP_ROWS, write_statistics=False)
    parts = root / "parts"
    parts.mkdir()
    pq.write_table(table.slice(0, 500), parts / "a.parquet", row_group_size=GROUP_ROWS)
    pq.write_table(table.slice(500), parts / "b.parquet", row_group_size=GROUP_ROWS)
    paths["parts"] = parts
    return paths


def duckdb_answer(location: Path, condition: str) -> dict[str, Any]:
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    glob = f"{location}/*.parquet" if location.is_dir() else str(location)
    con.execute(f"CREATE VIEW k AS SELECT * FROM read_parquet('{glob}')")
    c, s, lo = con.execute(QUERY.format(condition)).fetchone()  # type: ignore[misc]
    return {"c": c, "s": int(s) if s is not None else None, "lo": lo}


def run(device: str, location: Path, condition: str) -> tuple[dict[str, Any], int, int]:
    """penstock's answer, the row groups EXPLAIN ANALYZE says were skipped, and the
    batches it says were read."""
    db = penstock.connect(device=device, strict=True)
    db.register("k", location)
    sql = QUERY.format(condition)
    answer = db.sql(sql)
    assert answer.engine == db.backend.engine
    text = db.explain(sql, analyze=True)
    scan = re.search(r"batches: (\d+)(?: \((\d+) skipped by statistics\))?.*\n(?:.*\n)*?.*Scan k", text)
    assert scan is not None, text
    return answer.to_arrow().to_pylist()[0], int(scan.group(2) or 0), int(scan.group(1))


CASES = [
    # integers, every comparison, both ways round
    ("i = 250", 9),
    ("i < 250", 7),
    ("i <= 199", 8),
    ("i > 799", 8),
    ("i >= 800", 8),
    ("300 > i", 7),
    ("i BETWEEN 120 AND 180", 9),
    ("i IN (5, 950)", 8),
    ("i32 = 25", 9),  # an int32 column widened to the literal's int64
    ("i < 0", 10),
    # dates, written as DATE literals and as text compared with a date
    ("d = DATE '2020-03-01'", 9),
    ("d >= DATE '2022-06-01'", 8),
    ("d < '2020-04-10'", 9),
    # decimals: the literal's scale and precision differ from the column's
    ("m = 125.00", 9),
    ("m > 1000", 8),
    ("m BETWEEN 10.5 AND 20", 9),
    # text
    ("s = 'k0250'", 9),
    ("s < 'k0150'", 8),
    # timestamps with nanoseconds: the row at +99.5 µs is after 99 µs, so group 0 stays
    ("ts > TIMESTAMP '2020-09-13 12:26:40.000099'", 0),
    ("ts <= TIMESTAMP '2020-09-13 12:26:40.0001'", 9),
    # floats are never skipped on (NaN is outside Parquet's min/max)
    ("f < 10", 0),
    # NULLs: groups 3 and 7 are all NULL, group 5 half NULL
    ("n IS NULL", 7),
    ("n IS NOT NULL", 2),
    ("n > 250", 4),
    # conjunctions: a group goes when any conjunct rules it out
    ("i > 100 AND s < 'k0300'", 8),
    ("d >= DATE '2020-06-01' AND m < 500", 7),
    # filters statistics cannot refute: nothing skipped, answers still right
    ("i < 100 OR i > 900", 0),
    ("i <> 5", 0),
    ("upper(s) = 'K0250'", 0),
]


@pytest.mark.parametrize("condition, skipped", CASES, ids=[c for c, _ in CASES])
def test_skipped_row_groups_and_answer(device: str, files: dict[str, Path], condition: str, skipped: int) -> None:
    """The answer equals DuckDB's and EXPLAIN ANALYZE counts the refuted row groups."""
    answer, got_skipped, batches = run(device, files["stats"], condition)
    assert answer == duckdb_answer(files["stats"], condition)
    assert got_skipped == skipped
    assert batches == GROUPS - skipped  # every other group was read, once


@pytest.mark.parametrize("condition", ["i = 250", "d >= DATE '2022-06-01'", "s < 'k0150'", "n IS NULL",
                                       "n > 250"])
def test_file_without_statistics_skips_nothing(device: str, files: dict[str, Path], condition: str) -> None:
    """write_statistics=False: every row group is read, and the answer is unchanged."""
    answer, skipped, batches = run(device, files["nostats"], condition)
    assert answer == duckdb_answer(files["nostats"], condition)
    assert (skipped, batches) == (0, GROUPS)


@pytest.mark.parametrize("condition, skipped", [("i BETWEEN 450 AND 549", 8), ("n IS NULL", 7)])
def test_skipping_across_the_files_of_a_directory(device: str, files: dict[str, Path], condition: str,
                                                  skipped: int) -> None:
    """Each file's row groups are judged by that file's statistics."""
    answer, got_skipped, batches = run(device, files["parts"], condition)
    assert answer == duckdb_answer(files["parts"], condition)
    assert (got_skipped, batches) == (skipped, GROUPS - skipped)


def test_statistics_python_cannot_represent_are_not_used(device: str, tmp_path: Path) -> None:
    """A date past year 9999 has no datetime.date: its row group is read, not refuted, and
    the query does not fail."""
    far = pa.array([0, 3_000_000], pa.int32()).cast(pa.date32())  # 1970-01-01 and year 10183
    table = pa.table({"i": pa.array([1, 2], pa.int64()), "s": pa.array(["a", "b"]), "d": far})
    path = tmp_path / "far.parquet"
    pq.write_table(table, path)
    condition = "d >= DATE '2000-01-01'"
    answer, skipped, batches = run(device, path, condition)
    assert answer == duckdb_answer(path, condition) == {"c": 1, "s": 2, "lo": "b"}
    assert (skipped, batches) == (0, 1)
