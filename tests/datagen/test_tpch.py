"""Tests of the TPC-H generator (`penstock gen tpch`): dbgen's row counts, one schema in every
format, slices and row groups that do not change the data, facts of dbgen's data checked
against published answers and the specification's generation rules, and the one-line
errors of the command.

The published answers are DuckDB's SF 0.01 answer files for Q1 and Q6
(extension/tpch/dbgen/answers/sf0.01 in the duckdb repository, made with DuckDB's own dbgen):
they read only numeric columns, so they pin the numbers without depending on any text.
"""

from __future__ import annotations

import functools
import io
import math
import os
import stat
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from penstock.cli import main
from penstock.datagen import TPCH_QUERIES, generate_tpch, tpch_present
from penstock.datagen import tpch as tpch_module
from penstock.datagen.ssb import table_path
from penstock.datagen.tpch_tables import SCHEMAS, TABLES, table_rows
from penstock.errors import PenstockError
from penstock.datagen.progress import Progress

SF = 0.01
LINEITEM_ROWS = 60_175  # dbgen's lineitem at SF 0.01 (1..7 lines per order, seeded)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tpch") / "sf001"
    generate_tpch(out, SF, fmt="parquet", progress=False)
    return out


@pytest.fixture(scope="module")
def con(tiny: Path) -> Any:
    c = duckdb.connect()
    c.execute("SET threads = 2")
    for t in TABLES:
        c.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{table_path(tiny, t, 'parquet')}')")
    yield c
    c.close()


def _rows(con: Any, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in con.execute(sql).fetchall()]


def _read(path: Path, fmt: str, table: str) -> pa.Table:
    if fmt == "parquet":
        return pq.read_table(path)
    if fmt == "arrow":
        with ipc.open_file(path) as reader:
            return reader.read_all()
    types = {f.name: f.type for f in SCHEMAS[table]}
    return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types))


# --- sizes and schemas ------------------------------------------------------------------


def test_row_counts_are_dbgens(tiny: Path) -> None:
    expected = {"region": 5, "nation": 25, "supplier": 100, "customer": 1_500, "part": 2_000,
                "partsupp": 8_000, "orders": 15_000, "lineitem": LINEITEM_ROWS}
    got = {t: pq.ParquetFile(table_path(tiny, t, "parquet")).metadata.num_rows for t in TABLES}
    assert got == expected
    for t in TABLES[:-1]:
        assert table_rows(t, SF) == expected[t], t
    assert abs(table_rows("lineitem", SF) - LINEITEM_ROWS) < 0.01 * LINEITEM_ROWS
    assert table_rows("supplier", 0.0033) == 33 and table_rows("partsupp", 1) == 800_000
    assert tpch_present(tiny) and not tpch_present(tiny, "arrow")


def test_parquet_schema(tiny: Path) -> None:
    for t in TABLES:
        meta = pq.ParquetFile(table_path(tiny, t, "parquet"))
        assert meta.schema_arrow.equals(SCHEMAS[t]), t  # plain string, no field ids
        column = meta.metadata.row_group(0).column(0)
        assert column.compression == "SNAPPY" and column.statistics is not None, t
    types = {f.type for s in SCHEMAS.values() for f in s}
    assert types == {pa.int64(), pa.int32(), pa.decimal128(15, 2), pa.date32(), pa.string()}


@pytest.mark.parametrize("fmt", ["arrow", "csv"])
def test_formats_have_identical_content(tmp_path: Path, tiny: Path, fmt: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the command, with the progress bar forced on (it is silent off a terminal)."""
    bar = io.StringIO()
    monkeypatch.setattr(tpch_module, "Progress", functools.partial(Progress, force=True, stream=bar))
    monkeypatch.setattr(tpch_module, "ROWS_PER_GROUP", 10_000)  # several record batches
    out = tmp_path / fmt
    assert main(["gen", "tpch", "--sf", str(SF), "--out", str(out), "--format", fmt]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.{fmt}" for t in TABLES)
    assert bar.getvalue().rstrip().splitlines()[-1].startswith("tpch lineitem")
    assert "100%" in bar.getvalue()
    for t in TABLES:
        expected = pq.read_table(table_path(tiny, t, "parquet"))
        got = _read(table_path(out, t, fmt), fmt, t)
        if fmt == "arrow":
            assert got.schema.equals(SCHEMAS[t]), t
            with ipc.open_file(table_path(out, t, fmt)) as reader:
                batches = [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)]
            assert batches == [10_000] * (got.num_rows // 10_000) + [got.num_rows % 10_000], t
        else:
            header = table_path(out, t, fmt).open().readline().strip().replace('"', "").split(",")
            assert header == SCHEMAS[t].names, t
        assert got.num_rows == expected.num_rows, t
        for name in SCHEMAS[t].names:
            assert got.column(name).equals(expected.column(name)), (t, name)


def test_slices_and_row_groups_do_not_change_the_data(
    tmp_path: Path, tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large tables come from several tpchgen runs (--parts/--part) and are re-cut into
    groups of ROWS_PER_GROUP rows; small values of both make that happen at SF 0.01."""
    monkeypatch.setattr(tpch_module, "SLICE_ROWS", 40_000)
    monkeypatch.setattr(tpch_module, "ROWS_PER_GROUP", 10_000)
    plan = tpch_module.plan_jobs(SF)
    assert plan[0].tables == ("region", "nation", "supplier", "customer", "part", "partsupp",
                              "orders")
    assert [(j.tables, j.slices, j.k) for j in plan[1:]] == [(("lineitem",), 2, 1),
                                                              (("lineitem",), 2, 2)]
    generate_tpch(tmp_path, SF, progress=False)
    meta = pq.ParquetFile(table_path(tmp_path, "lineitem", "parquet")).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [10_000] * 6 + [175]
    for t in TABLES:
        assert pq.read_table(table_path(tmp_path, t, "parquet")).equals(
            pq.read_table(table_path(tiny, t, "parquet"))), t
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{t}.parquet" for t in TABLES)


# --- dbgen's data ---------------------------------------------------------------------------


def test_fixed_tables(con: Any) -> None:
    assert _rows(con, "SELECT r_regionkey, r_name FROM region ORDER BY 1") == [
        (0, "AFRICA"), (1, "AMERICA"), (2, "ASIA"), (3, "EUROPE"), (4, "MIDDLE EAST")]
    nations = _rows(con, "SELECT n_nationkey, n_name, n_regionkey FROM nation ORDER BY 1")
    assert nations[0] == (0, "ALGERIA", 0) and nations[24] == (24, "UNITED STATES", 1)
    assert nations[7] == (7, "GERMANY", 3) and nations[20] == (20, "SAUDI ARABIA", 4)


def test_first_lineitem_row(con: Any) -> None:
    """dbgen's first line (SF 1: 1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|...);
    part and supplier keys, and so the price, depend on the scale factor."""
    first = _rows(con, "SELECT * FROM lineitem LIMIT 1")[0]
    assert first == (1, 1552, 93, 1, Decimal("17.00"), Decimal("24710.35"), Decimal("0.04"),
                     Decimal("0.02"), "N", "O", date(1996, 3, 13), date(1996, 2, 12),
                     date(1996, 3, 22), "DELIVER IN PERSON", "TRUCK", "egular courts above the")


# DuckDB's answers/sf0.01/q01.csv (computed in floating point: compare to 1e-5).
PUBLISHED_Q1 = """\
A|F|380456|532348211.649998|505822441.486102|526165934.000839|25.575155|35785.709307|0.050081|14876
N|F|8971|12384801.370000|11798257.208000|12282485.056933|25.778736|35588.509684|0.047759|348
N|O|742802|1041502841.449998|989737518.634604|1029418531.523352|25.454988|35691.129209|0.049931|29181
R|F|381449|534594445.349999|507996454.406699|528524219.358906|25.597168|35874.006533|0.049828|14902
"""


def test_published_answers(con: Any) -> None:
    """Q1 and Q6 at SF 0.01 as published with DuckDB's dbgen (they read numbers only)."""
    got = _rows(con, TPCH_QUERIES["q01"])
    published = [line.split("|") for line in PUBLISHED_Q1.splitlines()]
    assert [r[:2] for r in got] == [tuple(p[:2]) for p in published]
    for row, pub in zip(got, published):
        assert row[-1] == int(pub[-1])  # count_order
        for value, text in zip(row[2:-1], pub[2:-1]):
            assert math.isclose(float(value), float(text), rel_tol=0, abs_tol=1e-5), (row, pub)
    assert _rows(con, TPCH_QUERIES["q06"]) == [(Decimal("1193053.2253"),)]


def test_specification_rules(con: Any) -> None:
    """TPC-H 4.2.3's generation rules, checked over the whole SF 0.01 database."""
    checks = {
        # retail price from the part key; extended price = quantity x retail price
        "price": "SELECT count(*) FROM part WHERE p_retailprice * 100 <> "
                 "90000 + (p_partkey // 10) % 20001 + 100 * (p_partkey % 1000)",
        "extended": "SELECT count(*) FROM lineitem JOIN part ON l_partkey = p_partkey "
                    "WHERE l_extendedprice <> l_quantity * p_retailprice",
        # order keys are sparse: the first 8 of every 32
        "sparse": "SELECT count(*) FROM orders WHERE o_orderkey % 32 >= 8",
        # a third of the customers (key divisible by 3) never order
        "custkey": "SELECT count(*) FROM orders WHERE o_custkey % 3 = 0",
        # R or A once received by the current date 1995-06-17, N after it
        "returnflag": "SELECT count(*) FROM lineitem WHERE CASE WHEN "
                      "l_receiptdate <= DATE '1995-06-17' THEN l_returnflag NOT IN ('R', 'A') "
                      "ELSE l_returnflag <> 'N' END",
        "linestatus": "SELECT count(*) FROM lineitem WHERE l_linestatus <> CASE WHEN "
                      "l_shipdate > DATE '1995-06-17' THEN 'O' ELSE 'F' END",
        "partsupp": "SELECT count(*) FROM (SELECT ps_partkey FROM partsupp GROUP BY 1 "
                    "HAVING count(*) <> 4)",
        "orphans": "SELECT count(*) FROM lineitem ANTI JOIN orders ON l_orderkey = o_orderkey",
    }
    bad = {name: _rows(con, sql)[0][0] for name, sql in checks.items()}
    assert bad == dict.fromkeys(checks, 0)
    per_order = _rows(con, "SELECT min(n), max(n) FROM (SELECT count(*) AS n FROM lineitem "
                           "GROUP BY l_orderkey)")
    assert per_order == [(1, 7)]


# --- errors -------------------------------------------------------------------------------


def _one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR:  "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("sf", ["0", "-1", "nan", "inf", "0.00005"])
def test_bad_scale_factor(capsys: Any, tmp_path: Path, sf: str) -> None:
    line = _one_error_line(capsys, ["gen", "tpch", f"--sf={sf}", "--out", str(tmp_path / "o")])
    assert "scale factor" in line
    assert not (tmp_path / "o").exists()


def test_unusable_output_directory(capsys: Any, tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    line = _one_error_line(capsys, ["gen", "tpch", "--sf", "0.01", "--out", str(a_file)])
    assert "not a directory" in line and str(a_file) in line
    line = _one_error_line(capsys, ["gen", "tpch", "--sf", "0.01", "--out", str(a_file / "sub")])
    assert "cannot create output directory" in line
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
        try:
            line = _one_error_line(capsys, ["gen", "tpch", "--sf", "0.01", "--out", str(locked)])
            assert "not writable" in line
        finally:
            locked.chmod(stat.S_IRWXU)


def test_missing_tpchgen(capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    line = _one_error_line(capsys, ["gen", "tpch", "--sf", "0.01", "--out", str(tmp_path / "o")])
    assert "tpchgen-cli not found" in line and "pip install tpchgen-cli" in line


def test_failing_tpchgen(capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "tpchgen-cli"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'starting' >&2\necho 'Error: disk on fire' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(tpch_module, "tpchgen_executable", lambda: fake)
    out = tmp_path / "o"
    line = _one_error_line(capsys, ["gen", "tpch", "--sf", "0.01", "--out", str(out)])
    assert "tpchgen-cli failed" in line and line.endswith("Error: disk on fire")
    assert list(out.iterdir()) == []  # no partial file, no temporary directory


def test_interrupted_run_stops_tpchgen_and_leaves_nothing_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tpch_module, "SLICE_ROWS", 20_000)  # lineitem in three runs
    runs: list[Any] = []
    real_run = tpch_module._Run

    def recording_run(*args: Any) -> Any:
        runs.append(real_run(*args))
        return runs[-1]

    real_normalised = tpch_module._normalised

    def interrupted(files: Any, table: str) -> Any:
        if table == "lineitem":
            raise KeyboardInterrupt
        return real_normalised(files, table)

    monkeypatch.setattr(tpch_module, "_Run", recording_run)
    monkeypatch.setattr(tpch_module, "_normalised", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate_tpch(tmp_path, SF, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{t}.parquet" for t in TABLES[:-1])
    assert runs and all(r.process.returncode is not None for r in runs)


def test_zstd_files_hold_the_same_data(tmp_path: Path, tiny: Path) -> None:
    """--compression zstd: every column chunk ZSTD-compressed, the content unchanged."""
    out = tmp_path / "zstd"
    assert main(["gen", "tpch", "--sf", str(SF), "--out", str(out), "--compression", "zstd"]) == 0
    for t in TABLES:
        path = table_path(out, t, "parquet")
        meta = pq.ParquetFile(path).metadata
        assert {meta.row_group(g).column(c).compression for g in range(meta.num_row_groups)
                for c in range(meta.num_columns)} == {"ZSTD"}, t
        assert pq.read_table(path).equals(pq.read_table(table_path(tiny, t, "parquet"))), t


def test_unknown_format_and_sf_in_the_api(tmp_path: Path) -> None:
    with pytest.raises(PenstockError, match="unknown Parquet compression"):
        generate_tpch(tmp_path, SF, compression="brotli2", progress=False)
    with pytest.raises(PenstockError, match="unknown format"):
        generate_tpch(tmp_path, SF, fmt="orc", progress=False)
    with pytest.raises(PenstockError, match="scale factor"):
        generate_tpch(tmp_path, math.nan, progress=False)
    assert list(tmp_path.iterdir()) == []
