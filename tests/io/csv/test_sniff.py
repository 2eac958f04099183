"""CSV files read as DuckDB reads them (io/csv/sniff.py, io/csv/reader.py): the dialect
sniffed where not given, types inferred from a sample and checked on every row, encodings,
header-only files, bad rows skipped and counted. Answers are compared with DuckDB's
read_csv where it reads the same file the same way."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import penstock
from penstock import FileError


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def rows(db: penstock.Connection, sql: str) -> list[tuple[object, ...]]:
    table = db.sql(sql).to_arrow()
    return [tuple(r) for r in zip(*(c.to_pylist() for c in table.columns))]


def duck(path: Path, sql: str = "SELECT * FROM t ORDER BY 1", **options: str) -> list[tuple[object, ...]]:
    given = "".join(f", {k}='{v}'" for k, v in options.items())
    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_csv('{path}'{given})")
    return con.execute(sql).fetchall()


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_delimiter_is_sniffed(device: str, tmp_path: Path, sep: str) -> None:
    text = f"id{sep}name{sep}price\n1{sep}apple{sep}1.5\n2{sep}\"pear{sep} green\"{sep}2.25\n3{sep}{sep}3\n"
    path = write(tmp_path, "data.csv", text.encode())
    db = penstock.connect(device=device)
    db.register("t", path)
    got = rows(db, "SELECT * FROM t ORDER BY 1")
    assert got == [(1, "apple", 1.5), (2, f"pear{sep} green", 2.25), (3, None, 3.0)]
    assert got == duck(path)
    assert rows(db, "SELECT sum(price) FROM t") == [(6.75,)]
    # DataFusion reads it with the same dialect (power() runs there)
    result = db.sql("SELECT sum(power(id, 2)) AS p FROM t")
    assert result.engine == "datafusion" and rows(db, "SELECT sum(power(id, 2)) AS p FROM t") == [(14.0,)]


def test_quoted_fields_hold_the_delimiter_quotes_and_newlines(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "q.csv", b'k,v\n1,"a, b"\n2,"say ""hi"""\n3,"two\nlines"\n')
    db = penstock.connect(device=device)
    db.register("t", path)
    assert rows(db, "SELECT k, v FROM t ORDER BY k") == [(1, "a, b"), (2, 'say "hi"'), (3, "two\nlines")]
    assert rows(db, "SELECT k, v FROM t ORDER BY k") == duck(path)


def test_backslash_escapes_and_single_quotes_are_sniffed(device: str, tmp_path: Path) -> None:
    escaped = write(tmp_path, "e.csv", b'k,v\n1,"a \\"b\\", c"\n2,"d"\n')
    single = write(tmp_path, "s.csv", b"k;v\n1;'x;y'\n2;'z'\n")
    db = penstock.connect(device=device)
    db.register("e", escaped)
    db.register("s", single)
    assert rows(db, "SELECT k, v FROM e ORDER BY k") == [(1, 'a "b", c'), (2, "d")]
    assert rows(db, "SELECT k, v FROM s ORDER BY k") == [(1, "x;y"), (2, "z")]
    assert rows(db, "SELECT k, v FROM s ORDER BY k") == duck(single)


def test_given_options_win_over_sniffing(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "semi.csv", b"a;b\n1;2\n")
    db = penstock.connect(device=device)
    db.register("t", path, delimiter=",")
    assert db.sql("SELECT * FROM t").to_arrow().column_names == ["a;b"]
    db.register("h", path, header=False)
    assert rows(db, "SELECT column1, column2 FROM h") == [("a", "b"), ("1", "2")]
    db.register("q", write(tmp_path, "q.csv", b'a,b\n"1,2"\n'), quote="")  # no quoting: '"1' and '2"'
    assert rows(db, "SELECT a, b FROM q") == [('"1', '2"')]


def test_a_file_without_a_header_is_sniffed(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "n.csv", b"1,x,2020-01-02\n2,y,2021-03-04\n")
    db = penstock.connect(device=device)
    db.register("t", path)
    assert db.sql("SELECT * FROM t").to_arrow().column_names == ["column1", "column2", "column3"]
    assert rows(db, "SELECT column1, column2 FROM t ORDER BY 1") == [(1, "x"), (2, "y")]
    assert duck(path, "SELECT column0, column1 FROM t ORDER BY 1") == [(1, "x"), (2, "y")]


def test_a_bad_number_past_the_sample_is_an_error_naming_file_line_and_column(device: str, tmp_path: Path) -> None:
    lines = [b"id,amount"] + [b"%d,%d" % (i, i % 97) for i in range(200_000)]
    bad_line = 150_001  # 1-based, the header being line 1
    lines[bad_line - 1] = b"150000,12x"
    path = write(tmp_path, "big.csv", b"\n".join(lines) + b"\n")
    assert path.stat().st_size > 1 << 20  # past the 1 MiB the types are inferred from
    db = penstock.connect(device=device)
    db.register("t", path)
    assert dict(zip(db.tables["t"].schema.names, map(str, db.tables["t"].schema.types)))["amount"] == "int64"
    with pytest.raises(FileError) as info:
        db.sql("SELECT sum(amount) FROM t")
    message = info.value.message
    assert info.value.sqlstate == "22P02", message
    assert str(path) in message and f"line {bad_line}" in message and "column amount" in message
    assert '"12x"' in message
    with pytest.raises(duckdb.ConversionException):  # DuckDB refuses it too
        duck(path, "SELECT sum(amount) FROM t")

    db.register("s", path, skip_bad_rows=True)
    assert rows(db, "SELECT count(*) FROM s") == [(199_999,)]
    assert db.skipped_rows("s") == 1


def test_skip_bad_rows_skips_and_counts_a_bad_number_and_a_latin1_row(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "mixed.csv", b"n,city\n1,Paris\nx,Oslo\n3,Z\xfcrich\n4,K\xc3\xb6ln\n")
    db = penstock.connect(device=device)
    schema = pa.schema([("n", pa.int64()), ("city", pa.string())])
    db.register("t", path, schema=schema, skip_bad_rows=True)
    assert rows(db, "SELECT n, city FROM t ORDER BY n") == [(1, "Paris"), (4, "Köln")]
    assert db.skipped_rows("t") == 2
    with pytest.raises(FileError) as info:  # without skip_bad_rows: the first bad value, by line
        db.register("strict", write(tmp_path, "latin.csv", b"n,city\n1,Paris\n3,Z\xfcrich\n"))
        db.sql("SELECT n, city FROM strict")
    assert info.value.sqlstate == "22021" and "line 3" in info.value.message


@pytest.mark.parametrize("encoding, data, expected", [
    ("latin-1", b"name;n\ncaf\xe9;1\nna\xefve;2\n", [("café", 1), ("naïve", 2)]),
    ("windows-1252", b"name;n\n\x80 5;1\n\x93q\x94;2\n", [("€ 5", 1), ("“q”", 2)]),
])
def test_encoding_decodes_to_utf8(device: str, tmp_path: Path, encoding: str, data: bytes,
                                  expected: list[tuple[object, ...]]) -> None:
    path = write(tmp_path, "enc.csv", data)
    db = penstock.connect(device=device)
    db.register("t", path, encoding=encoding)
    assert rows(db, "SELECT name, n FROM t ORDER BY n") == expected
    assert rows(db, "SELECT upper(name) AS u, power(n, 2) AS p FROM t ORDER BY n")[0][0] == expected[0][0].upper()
    if encoding == "latin-1":
        assert rows(db, "SELECT name, n FROM t ORDER BY n") == duck(path, "SELECT name, n FROM t ORDER BY n",
                                                                   encoding="latin-1")


def test_bytes_that_are_not_of_the_encoding_and_unknown_encodings(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "w.csv", b"a,b\n1,x\n2,y\x81\n")  # 0x81 is not a windows-1252 character
    db = penstock.connect(device=device)
    with pytest.raises(FileError) as info:
        db.register("t", path, encoding="windows-1252")
        db.sql("SELECT a, b FROM t")
    assert info.value.sqlstate == "22021" and "WIN1252" in info.value.message and "line 3" in info.value.message
    db.register("s", path, encoding="windows-1252", skip_bad_rows=True)
    assert rows(db, "SELECT a, b FROM s") == [(1, "x")] and db.skipped_rows("s") == 1
    with pytest.raises(FileError) as info:
        db.register("u", path, encoding="ebcdic")
    assert info.value.sqlstate == "22023" and "latin-1" in info.value.message


def test_a_header_only_file(device: str, tmp_path: Path) -> None:
    path = write(tmp_path, "empty.csv", b"a,b\n")
    db = penstock.connect(device=device)
    with pytest.raises(FileError) as info:
        db.register("t", path)
    assert str(path) in info.value.message and "no rows to infer column types" in info.value.message
    assert "schema=" in info.value.message
    db.register("t", path, schema=pa.schema([("a", pa.int64()), ("b", pa.date32())]))
    assert rows(db, "SELECT count(*), sum(a) FROM t") == [(0, None)]
    # in a glob, the first file with rows gives the types
    write(tmp_path, "more.csv", b"a,b\n5,2020-01-01\n")
    db.register("g", str(tmp_path / "*.csv"))
    assert str(db.tables["g"].schema.field("a").type) == "int64"
    assert rows(db, "SELECT sum(a) FROM g") == [(5,)]
