"""Shared fixtures of the device Parquet decoder's tests (io/parquet/device/).

`Harness` is a small harness around the decoders: it builds them the way the scan does
(types from the file's Arrow schema), decodes every row group on the test's backend, alone
(RowGroupDecoder: page headers parsed on the host) and in runs of row groups (BatchDecoder:
page headers walked by the kernels), and compares each column, values and NULLs, with what
pyarrow's own reader makes of the same row groups. pyarrow is the reference because it is
the reader the device path replaces.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.device import get_backend
from penstock.device.base import Backend
from penstock.io.device_batch import batch_to_arrow
from penstock.io.parquet.device.batch_decoder import BatchDecoder
from penstock.io.parquet.device.decoder import RowGroupDecoder
from penstock.plan.types import from_arrow


def _canonical(arr: pa.Array) -> list[Any]:
    """Python values of an array, with floats as their bit patterns (so NaN equals NaN and
    -0.0 differs from 0.0: the decoder must copy values bit for bit)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_timestamp(arr.type) or pa.types.is_date64(arr.type):
        return arr.view(pa.int64()).to_pylist()  # any int64, also past datetime's years
    if pa.types.is_date32(arr.type):
        return arr.view(pa.int32()).to_pylist()
    if pa.types.is_floating(arr.type):
        fmt = "<f" if pa.types.is_float32(arr.type) else "<d"
        return [None if v is None else struct.pack(fmt, v) for v in arr.to_pylist()]
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        # bytes, not str: damaged text need not be valid UTF-8, and must still compare
        arr = arr.cast(pa.large_binary()) if pa.types.is_large_string(arr.type) else arr.cast(pa.binary())
    return arr.to_pylist()


def assert_same_column(got: pa.Array, expected: pa.Array | pa.ChunkedArray, where: str) -> None:
    """Values and NULLs equal, row by row; the first differing row is named."""
    if isinstance(expected, pa.ChunkedArray):
        expected = expected.combine_chunks()
    assert len(got) == len(expected), f"{where}: {len(got)} rows, pyarrow has {len(expected)}"
    g, e = _canonical(got), _canonical(expected)
    if g != e:
        bad = next(i for i, (a, b) in enumerate(zip(g, e)) if a != b)
        raise AssertionError(f"{where}: row {bad} decoded as {g[bad]!r}, pyarrow reads {e[bad]!r}")


@dataclass
class Decoded:
    decoder: RowGroupDecoder
    batches: list[pa.RecordBatch]


class Harness:
    """Builds RowGroupDecoders on one backend and checks them against pyarrow."""

    def __init__(self, backend: Backend):
        self.backend = backend

    def decoder(self, path: Path, names: list[str] | None = None) -> RowGroupDecoder:
        file = pq.ParquetFile(path)
        names = list(names or file.schema_arrow.names)
        types = [from_arrow(file.schema_arrow.field(c).type) for c in names]
        return RowGroupDecoder(self.backend, Path(path), file, names, types)

    def decode_all(self, path: Path, names: list[str] | None = None) -> Decoded:
        decoder = self.decoder(path, names)
        batches = [batch_to_arrow(decoder.decode(g), decoder.names, self.backend)
                   for g in range(decoder.file.metadata.num_row_groups)]
        return Decoded(decoder, batches)

    def check(self, path: Path, names: list[str] | None = None, batched: bool = True) -> RowGroupDecoder:
        """Decode every row group and compare every column with pyarrow's read_row_group;
        then in runs of row groups (`batched`: BatchDecoder must take every run, as it
        should any file without page CRCs) and compare with read_row_groups."""
        decoded = self.decode_all(path, names)
        file = pq.ParquetFile(path)
        for g, batch in enumerate(decoded.batches):
            expected = file.read_row_group(g, columns=decoded.decoder.names)
            assert batch.num_rows == expected.num_rows, f"row group {g}: {batch.num_rows} rows, not {expected.num_rows}"
            for name in decoded.decoder.names:
                assert_same_column(batch.column(name), expected.column(name), f"{path.name} row group {g}, {name}")
        runs = self.decode_runs(path, names)
        for groups, batch in runs:
            if batch is None:
                assert not batched, f"{path.name}: BatchDecoder declined row groups {groups}"
                continue
            expected = file.read_row_groups(groups, columns=decoded.decoder.names)
            assert batch.num_rows == expected.num_rows, f"row groups {groups}: {batch.num_rows} rows"
            for name in decoded.decoder.names:
                assert_same_column(batch.column(name), expected.column(name), f"{path.name} row groups {groups}, {name}")
        return decoded.decoder

    def decode_runs(self, path: Path, names: list[str] | None = None,
                    batch_rows: int = 5000) -> list[tuple[list[int], pa.RecordBatch | None]]:
        """Runs of row groups (up to `batch_rows` rows each) through BatchDecoder; None for
        a run it declines."""
        import penstock.io.parquet.device.batch_decoder as module

        decoder = self.decoder(path, names)
        batches = BatchDecoder(decoder)
        saved, module.BATCH_ROWS = module.BATCH_ROWS, batch_rows
        try:
            runs = batches.plan(list(range(decoder.file.metadata.num_row_groups)), None)
        finally:
            module.BATCH_ROWS = saved
        out = []
        for groups in runs:
            batch = batches.decode(batches.read(groups))
            out.append((groups, None if batch is None else batch_to_arrow(batch, decoder.names, self.backend)))
        return out


@pytest.fixture
def harness(device: str) -> Harness:
    """The harness on the test's device (cpu; gpu under `pytest -m gpu`)."""
    return Harness(get_backend(device))


@pytest.fixture
def cpu_harness() -> Harness:
    return Harness(get_backend("cpu"))



@pytest.fixture
def same_column() -> Callable[[pa.Array, pa.Array | pa.ChunkedArray, str], None]:
    """assert_same_column, for tests that compare arrays of their own."""
    return assert_same_column
