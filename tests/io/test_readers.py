"""Readers: Parquet, Arrow IPC (file, Feather, stream), CSV, directories and globs; format
from the extension or `format=`; column pruning; dictionary-encoded text; file errors."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import penstock

DATA = pa.table({
    "id": pa.array([1, 2, 3, 4, None, 6, 7, 8], pa.int64()),
    "x": pa.array([1.5, None, 2.5, 3.0, 4.0, -1.0, 0.25, 8.0]),
    "s": pa.array(["a", "bb", None, "a", "ccc", "", "dd", "bb"]),
})

AGG = ("SELECT count(*) AS n, count(id) AS c, sum(id) AS si, sum(x) AS sx, "
       "min(s) AS mn, max(s) AS mx FROM t")
ROWS = "SELECT id, s FROM t WHERE x > 2"


def expected_agg(table: pa.Table) -> dict[str, Any]:
    return {"n": table.num_rows, "c": pc.count(table["id"]).as_py(), "si": pc.sum(table["id"]).as_py(),
            "sx": pc.sum(table["x"]).as_py(), "mn": pc.min(table["s"]).as_py(), "mx": pc.max(table["s"]).as_py()}


def expected_rows(table: pa.Table) -> list[tuple[Any, Any]]:
    kept = table.filter(pc.greater(table["x"], 2))
    return sorted(zip(kept["id"].to_pylist(), kept["s"].to_pylist()), key=repr)


def check(db: Any, table: pa.Table = DATA) -> None:
    agg = db.sql(AGG)
    assert agg.engine == "penstock-cpu", agg.fallback_reason
    assert agg.to_arrow().to_pylist() == [expected_agg(table)]
    rows = db.sql(ROWS)
    assert rows.engine == "penstock-cpu"
    got = rows.to_arrow()
    assert sorted(zip(got["id"].to_pylist(), got["s"].to_pylist()), key=repr) == expected_rows(table)


def write_parquet(path: Path, table: pa.Table = DATA) -> None:
    pq.write_table(table, path, row_group_size=3)


def write_ipc_file(path: Path, table: pa.Table = DATA) -> None:
    with ipc.new_file(path, table.schema) as w:
        for batch in table.to_batches(max_chunksize=3):
            w.write_batch(batch)


def write_ipc_stream(path: Path, table: pa.Table = DATA) -> None:
    with ipc.new_stream(path, table.schema) as w:
        for batch in table.to_batches(max_chunksize=3):
            w.write_batch(batch)


def write_feather(path: Path, table: pa.Table = DATA) -> None:
    feather.write_feather(table, path, chunksize=3)


def write_csv(path: Path, table: pa.Table = DATA) -> None:
    pcsv.write_csv(table, path)


WRITERS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "parquet": ("t.parquet", write_parquet),
    "arrow_file": ("t.arrow", write_ipc_file),
    "feather": ("t.feather", write_feather),
    "arrow_stream": ("t.arrows", write_ipc_stream),
    "arrow_stream_named_arrow": ("stream.arrow", write_ipc_stream),
    "csv": ("t.csv", write_csv),
}


def csv_expected() -> pa.Table:
    # CSV has no NULL text distinct from '': an empty field reads as NULL (both engines)
    return DATA.set_column(2, "s", pc.if_else(pc.equal(DATA["s"], ""), None, DATA["s"]))


@pytest.mark.parametrize("kind", list(WRITERS))
def test_file_formats_guessed_from_extension(cpu_db: Any, tmp_path: Path, kind: str) -> None:
    name, write = WRITERS[kind]
    write(tmp_path / name)
    cpu_db.register("t", tmp_path / name)
    assert cpu_db.tables["t"].format == ("arrow" if kind.startswith(("arrow", "feather")) else kind)
    check(cpu_db, csv_expected() if kind == "csv" else DATA)


def test_directory_of_parquet_files(cpu_db: Any, tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, start in enumerate(range(0, DATA.num_rows, 3)):
        write_parquet(folder / f"part-{i}.parquet", DATA.slice(start, 3))
    cpu_db.register("t", folder)
    assert len(cpu_db.tables["t"].files) == 3
    check(cpu_db)


def test_glob_of_parquet_files(cpu_db: Any, tmp_path: Path) -> None:
    for i, start in enumerate(range(0, DATA.num_rows, 3)):
        write_parquet(tmp_path / f"part-{i}.parquet", DATA.slice(start, 3))
    # a file the glob must not pick up
    write_parquet(tmp_path / "other.parquet", DATA)
    cpu_db.register("t", str(tmp_path / "part-*.parquet"))
    assert len(cpu_db.tables["t"].files) == 3
    check(cpu_db)


def test_format_override_for_an_odd_extension(cpu_db: Any, tmp_path: Path) -> None:
    write_parquet(tmp_path / "data.bin")
    with pytest.raises(penstock.QueryError) as info:
        cpu_db.register("t", tmp_path / "data.bin")
    assert "format" in info.value.message
    cpu_db.register("t", tmp_path / "data.bin", format="parquet")
    check(cpu_db)


def test_format_override_arrow_and_feather_alias(cpu_db: Any, tmp_path: Path) -> None:
    write_ipc_file(tmp_path / "data.dat")
    cpu_db.register("t", tmp_path / "data.dat", format="arrow")
    check(cpu_db)
    write_feather(tmp_path / "data.ft")
    cpu_db.register("t", tmp_path / "data.ft", format="feather")
    check(cpu_db)


def test_unknown_format_name_is_rejected(cpu_db: Any, tmp_path: Path) -> None:
    write_parquet(tmp_path / "t.parquet")
    with pytest.raises(penstock.QueryError) as info:
        cpu_db.register("t", tmp_path / "t.parquet", format="orc")
    assert "orc" in info.value.message


def bytes_read(explain: str) -> int:
    found = re.findall(r"bytes read: ([\d,]+)", explain)
    assert found, explain
    return sum(int(v.replace(",", "")) for v in found)


def test_column_pruning_reads_only_referenced_columns(cpu_db: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    wide = pa.table({f"c{i}": rng.integers(0, 1 << 40, 20000) for i in range(10)})
    pq.write_table(wide, tmp_path / "wide.parquet")
    cpu_db.register("w", tmp_path / "wide.parquet")
    one = cpu_db.explain("SELECT sum(c3) FROM w", analyze=True)
    assert "Scan w [c3]" in one
    everything = cpu_db.explain("SELECT sum(c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9) FROM w",
                                analyze=True)
    assert bytes_read(one) > 0
    assert bytes_read(one) * 4 < bytes_read(everything)
    # and the answers are right
    assert cpu_db.sql("SELECT sum(c3) AS s FROM w").to_arrow()["s"][0].as_py() == pc.sum(wide["c3"]).as_py()


DICT_VALUES = ["red", "green", None, "blue", "red", "green", "red", "", "blue"]
DICT_QUERIES = [
    "SELECT c, count(*) AS n, min(k) AS mk FROM {t} GROUP BY c",
    "SELECT k FROM {t} WHERE c = 'red' OR c IS NULL",
    "SELECT k, upper(c) AS u, c || '!' AS e, length(c) AS l FROM {t} WHERE c <> 'blue'",
    "SELECT count(DISTINCT c) AS n FROM {t}",
]


def canon(table: pa.Table) -> list[Any]:
    return sorted(table.to_pylist(), key=repr)


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "memory"])
def test_dictionary_encoded_text_answers_like_plain_text(cpu_db: Any, tmp_path: Path, fmt: str) -> None:
    plain = pa.table({"k": pa.array(range(len(DICT_VALUES)), pa.int64()), "c": pa.array(DICT_VALUES)})
    encoded = plain.set_column(1, "c", plain["c"].dictionary_encode())
    assert pa.types.is_dictionary(encoded.schema.field("c").type)
    cpu_db.register_arrow("plain", plain)
    if fmt == "parquet":
        pq.write_table(encoded, tmp_path / "dict.parquet")
        assert pa.types.is_dictionary(pq.read_schema(tmp_path / "dict.parquet").field("c").type)
        cpu_db.register("d", tmp_path / "dict.parquet")
    elif fmt == "arrow":
        write_ipc_file(tmp_path / "dict.arrow", encoded)
        cpu_db.register("d", tmp_path / "dict.arrow")
    else:
        cpu_db.register_arrow("d", encoded)
    for q in DICT_QUERIES:
        want = cpu_db.sql(q.format(t="plain"))
        got = cpu_db.sql(q.format(t="d"))
        assert got.engine == "penstock-cpu", (q, got.fallback_reason)
        assert canon(got.to_arrow()) == canon(want.to_arrow()), q
    # and plain text agrees with Python
    counts = cpu_db.sql(DICT_QUERIES[0].format(t="d")).to_arrow()
    assert {r["c"]: r["n"] for r in counts.to_pylist()} == {"red": 3, "green": 2, None: 1, "blue": 2, "": 1}


def test_missing_file_raises_file_error_naming_the_path(cpu_db: Any, tmp_path: Path) -> None:
    path = tmp_path / "no_such_file.parquet"
    with pytest.raises(penstock.FileError) as info:
        cpu_db.register("t", path)
    assert isinstance(info.value, penstock.QueryError)
    assert str(path) in info.value.message
    assert info.value.path == str(path)
    with pytest.raises(penstock.FileError):
        cpu_db.register("t", str(tmp_path / "nothing-*.parquet"))


@pytest.mark.parametrize("name", ["corrupt.parquet", "corrupt.arrow"])
def test_corrupt_file_raises_file_error_and_connection_stays_usable(cpu_db: Any, tmp_path: Path,
                                                                    name: str) -> None:
    write_parquet(tmp_path / "good.parquet")
    cpu_db.register("t", tmp_path / "good.parquet")
    bad = tmp_path / name
    bad.write_bytes(np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(penstock.FileError) as info:
        cpu_db.register("bad", bad)  # at registration, or else when read:
        cpu_db.sql("SELECT count(*) FROM bad")
    assert str(bad) in info.value.message
    check(cpu_db)


def test_corrupt_row_group_raises_file_error_at_query_time(cpu_db: Any, tmp_path: Path) -> None:
    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"id": pa.array(range(5000), pa.int64())}), path)
    data = bytearray(path.read_bytes())
    data[8:400] = b"\xab" * 392  # page headers and data; the footer stays intact
    path.write_bytes(bytes(data))
    cpu_db.register("dmg", path)
    with pytest.raises(penstock.FileError) as info:
        cpu_db.sql("SELECT sum(id) FROM dmg")
    assert str(path) in info.value.message


def test_file_removed_after_registration(cpu_db: Any, tmp_path: Path) -> None:
    write_parquet(tmp_path / "gone.parquet")
    cpu_db.register("t", tmp_path / "gone.parquet")
    check(cpu_db)
    shutil.copy(tmp_path / "gone.parquet", tmp_path / "kept.parquet")
    os.remove(tmp_path / "gone.parquet")
    with pytest.raises(penstock.FileError) as info:
        cpu_db.sql(AGG)
    assert "gone.parquet" in info.value.message
    cpu_db.register("t", tmp_path / "kept.parquet")
    check(cpu_db)


def test_directory_without_data_files(cpu_db: Any, tmp_path: Path) -> None:
    folder = tmp_path / "nothing_here"
    folder.mkdir()
    (folder / "README.txt").write_text("not data")
    with pytest.raises(penstock.QueryError) as info:
        cpu_db.register("t", folder)
    assert str(folder) in info.value.message
    assert ".parquet" in info.value.message  # says what it looked for


def test_files_with_different_schemas_in_one_directory(cpu_db: Any, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    write_parquet(folder / "a.parquet")
    write_parquet(folder / "b.parquet", DATA.drop(["x"]))
    with pytest.raises(penstock.QueryError) as info:
        cpu_db.register("t", folder)
    assert str(folder / "b.parquet") in info.value.message
    assert "schema" in info.value.message
    # nothing half-registered
    with pytest.raises(penstock.QueryError) as missing:
        cpu_db.sql("SELECT count(*) FROM t")
    assert missing.value.sqlstate == "42P01"
