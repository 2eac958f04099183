"""The `penstock` command: sql (table, csv, json, arrow output), explain, fallback notice,
errors and exit codes, gen ssb, demo. In-process through penstock.cli.main, and once as a
subprocess (`python -m penstock.cli`)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.ipc as ipc
import pytest

import penstock
from penstock.cli import main
from penstock.datagen.ssb_queries import SSB_QUERIES

QUERY = "SELECT id, grp FROM t WHERE id IS NOT NULL ORDER BY id"
EXPECTED = [{"id": 1, "grp": "a"}, {"id": 2, "grp": "b"}, {"id": 3, "grp": "a"},
            {"id": 4, "grp": None}, {"id": 5, "grp": "b"}]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sql_prints_an_aligned_table(capsys: Any, sample_parquet: Path) -> None:
    code, out, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}", QUERY)
    assert code == 0, err
    lines = out.rstrip("\n").splitlines()
    assert lines[-1] == "(5 rows)"
    header, rule, rows = lines[0], lines[1], lines[2:-1]
    assert [c.strip() for c in header.split("|")] == ["id", "grp"]
    assert set(rule) <= {"-", "+"} and "+" in rule
    assert len(rows) == 5
    bar = rule.index("+")
    for line in [header] + rows:
        assert line.index("|") == bar, line  # the columns line up under the rule's "+"
    assert [r.split("|")[0].strip() for r in rows] == ["1", "2", "3", "4", "5"]
    assert [r.split("|")[1].strip() for r in rows] == ["a", "b", "a", "", "b"]
    assert "penstock-cpu" in err


def test_one_row_is_singular(capsys: Any, sample_parquet: Path) -> None:
    code, out, _ = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}",
                       "SELECT count(*) AS n FROM t")
    assert code == 0
    assert out.rstrip().splitlines()[-1] == "(1 row)"
    assert out.splitlines()[2].strip() == "6"


def test_sql_from_a_file(capsys: Any, sample_parquet: Path, tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text(QUERY)
    code, out, _ = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}", "-f", str(query))
    assert code == 0
    assert out.rstrip().endswith("(5 rows)")


def test_csv_output_file(capsys: Any, sample_parquet: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    code, _, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}", "--format", "csv",
                       "-o", str(target), QUERY)
    assert code == 0, err
    table = pcsv.read_csv(target, convert_options=pcsv.ConvertOptions(strings_can_be_null=True))
    assert table.column_names == ["id", "grp"]
    assert table.to_pylist() == EXPECTED
    assert "wrote 5 rows" in err


def test_json_output_file(capsys: Any, sample_parquet: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    code, _, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}", "--format", "json",
                       "-o", str(target), "SELECT id, m, d FROM t WHERE id IN (1, 4) ORDER BY id")
    assert code == 0, err
    assert json.loads(target.read_text()) == [{"id": 1, "m": "1.50", "d": "2020-01-01"},
                                              {"id": 4, "m": None, "d": "2019-12-31"}]


def test_arrow_output_file(capsys: Any, sample_parquet: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.arrow"
    code, _, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}", "--format", "arrow",
                       "-o", str(target), QUERY)
    assert code == 0, err
    table = ipc.open_file(pa.memory_map(str(target))).read_all()
    assert table.to_pylist() == EXPECTED


def test_explain_analyze_prints_operator_lines(capsys: Any, sample_parquet: Path) -> None:
    code, out, err = run(capsys, "explain", "--analyze", "--device", "cpu", "-t", f"t={sample_parquet}",
                         "SELECT grp, count(*) FROM t WHERE id > 1 GROUP BY grp")
    assert code == 0, err
    assert "one fused kernel" in out
    assert "Scan t [" in out
    assert "Filter" in out and "Aggregate" in out
    assert "rows in" in out and "bytes read" in out


def test_fallback_query_prints_a_one_line_notice(capsys: Any, sample_parquet: Path) -> None:
    code, out, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}",
                         "SELECT row_number() OVER () AS rn FROM t")
    assert code == 0, err
    notices = [line for line in err.splitlines() if line.startswith("NOTICE:")]
    assert len(notices) == 1
    assert "window" in notices[0].lower()
    assert out.rstrip().endswith("(6 rows)")


def test_strict_fallback_query_fails(capsys: Any, sample_parquet: Path) -> None:
    code, _, err = run(capsys, "sql", "--strict", "--device", "cpu", "-t", f"t={sample_parquet}",
                       "SELECT row_number() OVER () AS rn FROM t")
    assert code != 0
    assert "ERROR:" in err


@pytest.mark.parametrize("query,state", [("SELECT nocol FROM t", "42703"),
                                         ("SELECT id / (i32 - i32) FROM t", "22012"),
                                         ("SELEC 1", "42601")])
def test_bad_query_exits_nonzero_with_sqlstate(capsys: Any, sample_parquet: Path, query: str, state: str) -> None:
    code, out, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}", query)
    assert code != 0
    assert "ERROR:" in err
    assert state in err
    assert out == ""


def test_bad_table_spec(capsys: Any, sample_parquet: Path) -> None:
    code, _, err = run(capsys, "sql", "--device", "cpu", "-t", f"t{sample_parquet}", "SELECT 1")
    assert code != 0
    assert "ERROR:" in err and "NAME=PATH" in err


def test_missing_table_file(capsys: Any, tmp_path: Path) -> None:
    missing = tmp_path / "missing.parquet"
    code, _, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={missing}", "SELECT 1")
    assert code != 0
    assert "ERROR:" in err and str(missing) in err


def test_no_query_given(capsys: Any, sample_parquet: Path) -> None:
    code, _, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}")
    assert code != 0
    assert "ERROR:" in err


@pytest.fixture(scope="module")
def ssb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ssb") / "sf001"
    assert main(["gen", "ssb", "--sf", "0.01", "--out", str(out), "--format", "parquet"]) == 0
    return out


def test_gen_ssb_writes_five_files(ssb_dir: Path) -> None:
    names = sorted(p.name for p in ssb_dir.iterdir() if p.is_file())
    assert names == ["customer.parquet", "date.parquet", "lineorder.parquet", "part.parquet",
                     "supplier.parquet"]
    import pyarrow.parquet as pq

    assert pq.ParquetFile(ssb_dir / "lineorder.parquet").metadata.num_rows > 50000


def test_gen_ssb_reports_what_it_wrote(capsys: Any, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "gen", "ssb", "--sf", "0.01", "--out", str(tmp_path / "g"), "--format", "arrow")
    assert code == 0
    assert "5 files" in out
    assert len(list((tmp_path / "g").glob("*.arrow"))) == 5


def test_demo_runs_all_13_queries_on_penstock(capsys: Any, ssb_dir: Path) -> None:
    code, out, err = run(capsys, "demo", "--sf", "0.01", "--data", str(ssb_dir), "--device", "cpu")
    assert code == 0, err
    assert len(SSB_QUERIES) == 13
    for name in SSB_QUERIES:
        line = next((x for x in out.splitlines() if x.startswith(f"{name}:")), None)
        assert line is not None, f"{name} missing from demo output"
        assert "on penstock-cpu" in line
        # the first run is printed first, then the repeat on the optimised kernels
        assert re.search(r": first run [\d.]+ ms \(kernels compiled or loaded\), warm [\d.]+ ms$", line), line
    assert "fell back" not in err


def test_cli_as_a_subprocess_with_arrow_on_a_pipe(sample_parquet: Path) -> None:
    src = Path(penstock.__file__).resolve().parents[1]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    cmd = [sys.executable, "-m", "penstock.cli", "sql", "--device", "cpu", "-t", f"t={sample_parquet}"]
    done = subprocess.run(cmd + [QUERY], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().rstrip().endswith("(5 rows)")
    done = subprocess.run(cmd + ["--format", "arrow", QUERY], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert ipc.open_file(io.BytesIO(done.stdout)).read_all().to_pylist() == EXPECTED
    done = subprocess.run(cmd + ["SELECT nocol FROM t"], capture_output=True, env=env, timeout=120)
    assert done.returncode != 0
    assert "ERROR:" in done.stderr.decode() and "42703" in done.stderr.decode()


def test_json_output_keeps_columns_that_share_a_name(capsys: Any, sample_parquet: Path) -> None:
    code, out, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={sample_parquet}", "--format", "json",
                         "SELECT id, id, id * 10 AS id_1, grp AS id FROM t WHERE id = 2")
    assert code == 0, err
    assert json.loads(out) == [{"id": 2, "id_2": 2, "id_1": 20, "id_3": "b"}]


def test_csv_table_options_sniffing_and_encoding(capsys: Any, tmp_path: Path) -> None:
    path = tmp_path / "sales.csv"
    path.write_bytes(b"city;amount\nZ\xfcrich;1,5\nK\xf6ln;2\n")  # ";" sniffed; "1,5" (a decimal comma) is text
    code, out, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={path}?encoding=latin-1", "--format", "json",
                         "SELECT city, amount FROM t ORDER BY city")
    assert code == 0, err
    assert json.loads(out) == [{"city": "Köln", "amount": "2"}, {"city": "Zürich", "amount": "1,5"}]
    code, _, err = run(capsys, "sql", "--device", "cpu", "-t", f"t={path}?encoding=klingon", "SELECT 1")
    assert code != 0 and "unknown CSV encoding" in err
