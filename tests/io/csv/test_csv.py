"""CSV options and malformed CSV (io/csv/reader.py, io/csv/errors.py): delimiter, header, declared
columns on both engines; each kind of bad input is an error naming the file, line and
column with PostgreSQL's SQLSTATE, or with skip_bad_rows a counted omission."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import penstock
from penstock import FileError, QueryError


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def rows(db: penstock.Connection, sql: str) -> list[tuple[object, ...]]:
    return [tuple(r.values()) for r in db.sql(sql).to_arrow().to_pylist()]


def test_delimiter_and_header_options_on_both_engines(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "semi.txt", b"1;x\n2;y\n3;\n")
    db = penstock.connect(device=device)
    db.register("t", path, format="csv", delimiter=";", header=False)
    assert rows(db, "SELECT column1, column2 FROM t ORDER BY 1") == [(1, "x"), (2, "y"), (3, None)]
    result = db.sql("SELECT power(column1, 2) AS p FROM t ORDER BY 1")  # DataFusion reads it alike
    assert result.engine == "datafusion" and result.to_arrow().column("p").to_pylist() == [1.0, 4.0, 9.0]


def test_declared_columns(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", b"a,b\n1,2.50\n2,3.25\n")
    db = penstock.connect(device=device, strict=True)
    db.register("t", path, schema=pa.schema([("a", pa.int32()), ("b", pa.decimal128(5, 2))]))
    assert rows(db, "SELECT sum(b) AS s FROM t")[0][0] == pytest.approx(5.75)


@pytest.mark.parametrize("data, state, words", [
    (b"a,b\n1,x\n2,y\nbad,z\n", "22P02", ['"bad"', "line 4", "column a", "integer"]),
    (b"a,b\n1,caf\xe9\n", "22021", ["UTF8", "line 2"]),
    (b'a,b\n1,"x\n2,y\n3,z\n', "22P04", ["unterminated", "line 2"]),
    (b"a,b\n1,x\n2,y,extra\n3,z\n", "22P04", ["extra data", "line 3"]),
])
def test_malformed_input_names_file_line_and_column(device: str, tmp_path: Path, data: bytes, state: str,
                                                    words: list[str]) -> None:
    path = write(tmp_path, "bad.csv", data)
    db = penstock.connect(device=device)
    declared = pa.schema([("a", pa.int32()), ("b", pa.string())]) if state == "22P02" else None
    with pytest.raises(FileError) as info:
        db.register("t", path, schema=declared)
        db.sql("SELECT a, b FROM t")
    assert info.value.sqlstate == state and str(path) in info.value.message
    for word in words:
        assert word in info.value.message
    db.register_arrow("ok", pa.table({"x": [1]}))  # the connection still works
    assert rows(db, "SELECT x FROM ok") == [(1,)]


def test_skip_bad_rows_leaves_them_out_and_counts_them(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "bad.csv", b"a,b\n1,x\nbad,y\n3,z,extra\n4,w\n")
    db = penstock.connect(device=device)
    db.register("t", path, schema=pa.schema([("a", pa.int64()), ("b", pa.string())]), skip_bad_rows=True)
    assert rows(db, "SELECT a, b FROM t ORDER BY a") == [(1, "x"), (4, "w")]
    assert db.skipped_rows("t") == 2


def test_a_text_column_in_a_sum_is_postgresql_s_error(device: str, tmp_path: Path) -> None:
    for data in (b"a,b\n1,x\nbad,y\n",):  # a value in the sample that is not a number: text
        path = write(tmp_path, "t.csv", data)
        db = penstock.connect(device=device)
        db.register("t", path)
        with pytest.raises(QueryError) as info:
            db.sql("SELECT sum(a) FROM t")
        assert info.value.sqlstate == "42883" and info.value.message == "function sum(text) does not exist"
        assert info.value.position == 8
