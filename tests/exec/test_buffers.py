"""The device's prefix sum and bitmap steps (exec/buffers.py: text_offsets, pack_bits,
unpack_bits) against numpy, at sizes around their tile and byte edges, batches laid end to
end (concat) against pyarrow, and results that need them (nullable text, booleans) against
DuckDB with CuPy's own routines out of reach."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.device import get_backend
from penstock.exec.buffers import arrow_to_batch, buffer_to_arrow, concat, pack_bits, text_offsets, unpack_bits
from penstock.plan.types import from_arrow

SIZES = [0, 1, 7, 8, 9, 255, 4095, 4096, 4097, 100_003, 2_500_000]


@pytest.mark.parametrize("n", SIZES)
def test_text_offsets_are_a_prefix_sum(device: str, n: int) -> None:
    be = get_backend(device)
    lengths = np.random.default_rng(n).integers(0, 300, n).astype(np.int32)
    got = be.to_host(text_offsets(be, be.to_device(lengths)))
    want = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int32)
    assert got.dtype == np.int32 and np.array_equal(got, want)


@pytest.mark.parametrize("n", SIZES)
def test_bitmaps_pack_and_unpack_like_numpy(device: str, n: int) -> None:
    be = get_backend(device)
    rng = np.random.default_rng(n + 1)
    flags = rng.integers(0, 2, n).astype(np.uint8) * rng.integers(1, 200, n).astype(np.uint8)  # nonzero: set
    bits = be.to_host(pack_bits(be, be.to_device(flags)))
    assert np.array_equal(bits, np.packbits(flags != 0, bitorder="little"))
    back = be.to_host(unpack_bits(be, be.to_device(bits), n))
    assert np.array_equal(back, (flags != 0).astype(np.uint8))
    as_bool = be.to_host(pack_bits(be, be.to_device(flags != 0)))  # booleans, viewed as bytes
    assert np.array_equal(as_bool, bits)


def _table(rows: int) -> pa.Table:
    names = [None if i % 11 == 0 else f"name-{i % 37}-" + "x" * (i % 5) for i in range(rows)]
    return pa.table({"id": pa.array(range(rows), pa.int64()), "name": pa.array(names, pa.string()),
                     "v": pa.array([None if i % 13 == 0 else i % 100 for i in range(rows)], pa.int32())})


@pytest.fixture
def no_cupy_routines(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the GPU, CuPy's cumsum and bit packing raise: each compiles on a process's first use."""
    if device != "gpu":
        return
    import cupy

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a CuPy routine that compiles on first use ran")

    for name in ("cumsum", "packbits", "unpackbits", "concatenate"):
        monkeypatch.setattr(cupy, name, refuse)


@pytest.mark.parametrize("sizes", [(5000, 0, 1, 70_000), (0, 3), (1, 1)])
def test_batches_laid_end_to_end_equal_pyarrow(device: str, no_cupy_routines: None, sizes: tuple[int, ...]) -> None:
    """A join's build side from several batches (text with nulls, booleans, integers, an
    empty batch among them): the same rows as pyarrow's concatenation."""
    be = get_backend(device)
    tables = [_table(n).append_column("big", pa.array([i % 3 == 0 for i in range(n)], pa.bool_()))
              .append_column("price", pa.array([None if i % 7 == 0 else i * 10**20 - 5 for i in range(n)], pa.decimal128(38, 2)))
              for n in sizes]
    types = [from_arrow(f.type) for f in tables[0].schema]
    batches = [arrow_to_batch(be, table, types) for table in tables]
    got = buffer_to_arrow(be, [concat(be, batches, types)], types, names=tables[0].column_names)
    assert got.equals(pa.concat_tables(tables).combine_chunks())


@pytest.mark.parametrize("rows", [1, 5000, 70_000])
def test_text_and_boolean_results_equal_duckdb(device: str, no_cupy_routines: None, rows: int) -> None:
    table = _table(rows)
    sql = "SELECT id, name, v > 40 AS big, v IS NULL AS missing FROM t WHERE id % 3 <> 1 ORDER BY id"
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", table)
    got = db.sql(sql).to_arrow()
    oracle = duckdb.connect()
    oracle.register("t", table)
    want = oracle.sql(sql).to_arrow_table()
    assert got.column("name").to_pylist() == want.column("name").to_pylist()
    assert got.column("big").to_pylist() == want.column("big").to_pylist()
    assert got.column("missing").to_pylist() == want.column("missing").to_pylist()
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
