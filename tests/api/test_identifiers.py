"""Table names are SQL identifiers, folded as PostgreSQL folds them, on penstock's kernels
(strict: a fallback would fail the test): register("Sales") is table sales, found as
sales, Sales or SALES; a quoted name ('"Sales"') keeps its case and is found only quoted."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import penstock
from penstock import QueryError


def data() -> pa.Table:
    return pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "good.csv"
    pcsv.write_csv(data(), path)
    return path


@pytest.mark.parametrize("how", ["file", "arrow"])
def test_an_unquoted_name_folds_to_lower_case(device: str, csv_file: Path, how: str) -> None:
    db = penstock.connect(device=device, strict=True)
    if how == "file":
        db.register("Sales", csv_file)
    else:
        db.register_arrow("Sales", data())
    for sql in ("SELECT sum(a) AS s FROM sales", "SELECT sum(a) AS s FROM Sales", "SELECT sum(a) AS s FROM SALES"):
        result = db.sql(sql)
        assert result.engine.startswith("penstock") and result.to_arrow().column("s").to_pylist() == [6]
    with pytest.raises(QueryError) as info:
        db.sql('SELECT sum(a) FROM "Sales"')
    assert info.value.sqlstate == "42P01"
    assert db.cache("SALES") > 0
    db.unregister("sAlEs")
    with pytest.raises(QueryError):
        db.sql("SELECT sum(a) FROM sales")


def test_a_quoted_name_keeps_its_case(device: str, csv_file: Path) -> None:
    db = penstock.connect(device=device, strict=True)
    db.register('"Sales"', csv_file)
    db.register("sales", csv_file)  # another table
    assert db.sql('SELECT count(*) AS n FROM "Sales"').to_arrow().column("n").to_pylist() == [3]
    assert db.sql("SELECT count(*) AS n FROM sales").to_arrow().column("n").to_pylist() == [3]
    assert set(db.tables) == {"Sales", "sales"}
    db.unregister('"Sales"')
    assert set(db.tables) == {"sales"}


def test_the_cli_table_option_folds_the_same_way(csv_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from penstock.cli import main

    assert main(["sql", "--device", "cpu", "--strict", "-t", f"Sales={csv_file}", "SELECT sum(a) AS s FROM sales"]) == 0
    assert main(["sql", "--device", "cpu", "--strict", "-t", f'"Sales"={csv_file}',
                 'SELECT sum(a) AS s FROM "Sales"']) == 0
    out = capsys.readouterr().out
    assert out.count("\n6\n") == 2
