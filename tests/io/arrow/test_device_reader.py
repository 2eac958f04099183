"""The Arrow IPC reader that moves column buffers straight to the device (io/arrow/device_reader.py).

Every read path (pread, direct, kvikio) and the coalescing of record batches into device
batches are checked the strictest way there is: what arrives on the device, turned back
into Arrow, must equal the file's table. On the CPU backend the same code runs with host
memory as "device" memory; under `pytest -m gpu` it runs on the GPU.
"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import penstock
from penstock.device import get_backend
from penstock.errors import FileError
from penstock.io.arrow import device_reader
from penstock.io.device_batch import batch_to_arrow
from penstock.io.arrow.device_reader import ArrowDeviceReader
from penstock.plan.types import from_arrow

# record batch sizes that cross byte boundaries of bitmaps, with an empty batch among them
BATCH_ROWS = [1, 7, 8, 16, 0, 3, 1000, 5, 64, 13]


def every_type_table(rows: int, nulls: bool, seed: int = 0) -> pa.Table:
    """A table with one column per type the reader moves as raw buffers."""
    import random

    rng = random.Random(seed)

    def maybe(v: Any) -> Any:
        return None if nulls and rng.random() < 0.2 else v
    return pa.table({
        "i8": pa.array([maybe(rng.randint(-128, 127)) for _ in range(rows)], pa.int8()),
        "i16": pa.array([maybe(rng.randint(-30000, 30000)) for _ in range(rows)], pa.int16()),
        "i32": pa.array([maybe(rng.randint(-2**31, 2**31 - 1)) for _ in range(rows)], pa.int32()),
        "i64": pa.array([maybe(rng.randint(-2**40, 2**40)) for _ in range(rows)], pa.int64()),
        "f32": pa.array([maybe(rng.uniform(-1, 1)) for _ in range(rows)], pa.float32()),
        "f64": pa.array([maybe(rng.uniform(-1e9, 1e9)) for _ in range(rows)], pa.float64()),
        "b": pa.array([maybe(rng.random() < 0.5) for _ in range(rows)], pa.bool_()),
        "d": pa.array([maybe(datetime.date(2000, 1, 1) + datetime.timedelta(days=rng.randint(0, 9000)))
                       for _ in range(rows)], pa.date32()),
        "ts": pa.array([maybe(datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=rng.randint(0, 10**8)))
                        for _ in range(rows)], pa.timestamp("us")),
        "m": pa.array([maybe(decimal.Decimal(rng.randint(-10**9, 10**9)).scaleb(-2)) for _ in range(rows)],
                      pa.decimal128(12, 2)),
        "s": pa.array([maybe("é" * rng.randint(0, 3) + str(rng.randint(0, 99))) for _ in range(rows)], pa.string()),
    })


def write_batches(path: Path, sizes: list[int], nulls_in: set[int], **options: Any) -> pa.Table:
    """An Arrow IPC file with one record batch per size; batches listed in `nulls_in` have NULLs."""
    parts = [every_type_table(n, k in nulls_in, seed=k) for k, n in enumerate(sizes)]
    schema = parts[0].schema
    with ipc.new_file(str(path), schema, options=ipc.IpcWriteOptions(**options)) as w:
        for part in parts:
            w.write_batch(part.combine_chunks().to_batches()[0] if part.num_rows else
                          pa.RecordBatch.from_pylist([], schema=schema))
    return pa.concat_tables(parts)


def read_back(path: Path, device: str, mode: str, columns: list[str], **kw: Any) -> tuple[pa.Table, int]:
    """What the reader puts on the device, as an Arrow table, and how many device batches."""
    be = get_backend(device)
    schema = ipc.open_file(str(path)).schema
    types = [from_arrow(schema.field(c).type) for c in columns]
    reader = ArrowDeviceReader(path, columns, types, be, mode, **kw)
    assert reader.supported()
    batches = [batch_to_arrow(b, columns, be) for b, _ in reader.batches()]
    return pa.Table.from_batches(batches, schema=batches[0].schema), len(batches)


def expected(table: pa.Table, columns: list[str]) -> pa.Table:
    return table.select(columns).combine_chunks()


ALL = ["i8", "i16", "i32", "i64", "f32", "f64", "b", "d", "ts", "m", "s"]
FIXED = ["i8", "i16", "i32", "i64", "f32", "f64", "b", "d", "ts", "m"]


@pytest.mark.parametrize("nulls_in", [set(), {0}, {2, 6}, set(range(len(BATCH_ROWS)))],
                         ids=["no-nulls", "nulls-first", "nulls-some", "nulls-all"])
@pytest.mark.parametrize("columns", [ALL, FIXED, ["b"], ["i32", "s"]], ids=["all", "fixed", "bool", "int-text"])
def test_pread_reads_every_type_exactly(tmp_path: Path, device: str, nulls_in: set[int], columns: list[str]) -> None:
    path = tmp_path / "t.arrow"
    table = write_batches(path, BATCH_ROWS, nulls_in)
    got, _ = read_back(path, device, "pread", columns)
    assert got.equals(expected(table, columns))


def test_batches_are_coalesced_at_byte_boundaries_only(tmp_path: Path, device: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed-width batches without NULLs join into one device batch; a batch that starts
    inside a bitmap byte, or brings NULLs, starts a new one; the answer is the same."""
    path = tmp_path / "t.arrow"
    table = write_batches(path, [8, 16, 8, 3, 8, 8], nulls_in={4})
    got, count = read_back(path, device, "pread", FIXED)
    assert got.equals(expected(table, FIXED))
    # runs: [8,16,8,3] (3 ends the byte-aligned part), [8 with NULLs, 8] -> 2
    assert count == 2


def test_device_batch_row_cap_splits_runs(tmp_path: Path, device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_reader, "DEVICE_BATCH_ROWS", 24)
    path = tmp_path / "t.arrow"
    table = write_batches(path, [8] * 9, nulls_in=set())
    got, count = read_back(path, device, "pread", ["i64", "b"])
    assert got.equals(expected(table, ["i64", "b"]))
    assert count == 3


def test_byte_cap_splits_runs(tmp_path: Path, device: str) -> None:
    """A memory cap's share bounds a device batch's bytes (8 rows of int64: 64 bytes)."""
    path = tmp_path / "t.arrow"
    table = write_batches(path, [8] * 6, nulls_in=set())
    got, count = read_back(path, device, "pread", ["i64"], max_bytes=128)
    assert got.equals(expected(table, ["i64"]))
    assert count == 3


def test_text_columns_are_never_coalesced(tmp_path: Path, device: str) -> None:
    path = tmp_path / "t.arrow"
    table = write_batches(path, [8, 8, 8], nulls_in=set())
    got, count = read_back(path, device, "pread", ["s"])
    assert got.equals(expected(table, ["s"]))
    assert count == 3


def test_direct_reads_exactly_where_o_direct_works(tmp_path: Path, device: str) -> None:
    from penstock.io.read.read_path import direct_problem

    path = tmp_path / "t.arrow"
    table = write_batches(path, BATCH_ROWS, nulls_in={1, 6})
    if direct_problem(path) is not None:
        pytest.skip(f"O_DIRECT unusable here: {direct_problem(path)} (the fallback has its own test)")
    got, _ = read_back(path, device, "direct", ALL)
    assert got.equals(expected(table, ALL))


def test_truncated_file_is_a_file_error_naming_it(tmp_path: Path, device: str) -> None:
    path = tmp_path / "t.arrow"
    write_batches(path, [1000], nulls_in=set())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FileError, match="t.arrow"):
        ArrowDeviceReader(path, ["i64"], [from_arrow(pa.int64())], get_backend(device))


# -- end to end: which path ran is said, and the answer is right ----------------------------

QUERY = ("SELECT b, count(*) AS n, sum(i64) AS s, min(d) AS lo, max(m) AS hi, count(s) AS texts "
         "FROM t GROUP BY b ORDER BY b NULLS LAST")


def duckdb_answer(table: pa.Table) -> pa.Table:
    import duckdb

    con = duckdb.connect()
    con.register("t", table)
    return con.sql(QUERY).to_arrow_table()


@pytest.mark.parametrize("io", ["auto", "pread", "direct", "kvikio"])
def test_every_read_path_answers_and_says_what_ran(tmp_path: Path, device: str, io: str) -> None:
    from penstock.io.read.read_path import direct_problem, kvikio_available

    path = tmp_path / "t.arrow"
    table = write_batches(path, BATCH_ROWS * 3, nulls_in={0, 5, 17})
    db = penstock.connect(device=device, io=io)
    db.register("t", path)
    result = db.sql(QUERY)
    assert result.engine == f"penstock-{device}"
    assert result.to_arrow().to_pylist() == duckdb_answer(table).to_pylist()
    plan = db.explain(QUERY, analyze=True)
    line = next(line for line in plan.splitlines() if "read path:" in line)
    if io == "pread" or (io == "auto" and device == "cpu"):
        assert "read path: pread" in line
    elif io == "direct":
        problem = direct_problem(path)
        assert ("read path: pread (direct asked for, but" in line) if problem else ("read path: direct" in line)
    elif io == "kvikio":
        usable = device == "gpu" and kvikio_available()
        assert ("read path: kvikio" in line) if usable else ("read path: pread (kvikio asked for, but" in line)
    elif kvikio_available():  # auto on a GPU: the faster path, measured
        assert "measured" in line
    else:  # auto on a GPU without KvikIO: pread, and why
        assert "read path: pread (KvikIO is not installed)" in line


@pytest.mark.parametrize("kind", ["compressed", "dictionary"])
def test_layouts_the_reader_cannot_move_go_through_pyarrow(tmp_path: Path, device: str, kind: str) -> None:
    path = tmp_path / "t.arrow"
    if kind == "compressed":
        table = write_batches(path, BATCH_ROWS, nulls_in={2}, compression="zstd")
    else:
        table = every_type_table(500, nulls=True)
        encoded = table.set_column(table.schema.get_field_index("s"), "s", table.column("s").dictionary_encode())
        with ipc.new_file(str(path), encoded.schema) as w:
            w.write_table(encoded)
    db = penstock.connect(device=device)
    db.register("t", path)
    assert db.sql(QUERY).to_arrow().to_pylist() == duckdb_answer(table).to_pylist()
    assert "read path: pyarrow arrow reader" in db.explain(QUERY, analyze=True)
