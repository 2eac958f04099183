"""The input of an out-of-core sort, read in batches of a bounded size.

pyarrow's dataset scanner reads ahead (up to 16 batches, whole Parquet row groups of a
million rows and more), which held 600 MiB of a 430 MiB file in memory however small the
sort's limit. Here each format is read the way that holds only the batch being read:
Parquet through ParquetFile.iter_batches without pre-buffering (pages are read as they are
decoded), Arrow IPC a record batch at a time into memory of our own (a memory map would count
every page read in the process's resident set until the file is closed), CSV through the
streaming reader with a bounded block size. The dataset API is used only to find the
schema and to count rows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from penstock.errors import UNDEFINED_COLUMN, QueryError
from penstock.io.tables import guess_format, list_files

HEAD_ROWS = 1000  # rows read to measure a row's size in memory
READ_BUFFER = 64 << 10  # Parquet: bytes buffered per column being read (1 MiB read no faster)
MIN_READ_BUFFER = 64 << 10
CSV_BLOCK_MAX = 16 << 20


class SortInput:
    """A file, directory or glob of Parquet, Arrow IPC or CSV files, with one schema."""

    def __init__(self, source: str | os.PathLike[str], key_names: list[str]):
        location = os.fspath(source)
        self.files: list[Path] = list_files(location)
        self.format = guess_format(self.files, location)
        self.dataset = ds.dataset([str(f) for f in self.files], format={"arrow": "ipc"}.get(self.format, self.format))
        self.schema: pa.Schema = self.dataset.schema
        missing = [k for k in key_names if k not in self.schema.names]
        if missing:
            raise QueryError(f"column \"{missing[0]}\" does not exist in {location}", UNDEFINED_COLUMN)
        self.rows: int = self.dataset.count_rows()

    # -- sizes -------------------------------------------------------------------------------
    def row_bytes(self, key_names: list[str]) -> tuple[float, float]:
        """(bytes a row takes in memory (Arrow), bytes its keys take), from the first rows
        and, for Parquet, the larger of those and the files' uncompressed sizes: a head of
        short strings must not hide long ones later, and a dictionary-encoded column is
        larger in memory than in its file."""
        head: pa.RecordBatch | None = None
        for head in self.batches(HEAD_ROWS):
            break
        if head is None or not head.num_rows:
            return 1.0, 8.0 * len(key_names)
        measured = head.nbytes / head.num_rows
        keys = max(head.select(key_names).nbytes / head.num_rows, 1.0)
        if self.format != "parquet" or not self.rows:
            return max(measured, 1.0), keys
        metas = [pq.ParquetFile(f).metadata for f in self.files]
        stored = sum(m.row_group(g).total_byte_size for m in metas for g in range(m.num_row_groups))
        return max(measured, stored / self.rows, 1.0), keys

    # -- reading -----------------------------------------------------------------------------
    def batches(self, rows: int, columns: list[str] | None = None,
                buffer_bytes: int = READ_BUFFER) -> Iterator[pa.RecordBatch]:
        """Every row, in record batches of at most `rows` rows (`columns` only, else all)."""
        rows = max(int(rows), 1)
        schema = self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        for path in self.files:
            for batch in self._file_batches(path, rows, columns, schema, buffer_bytes):
                if batch.num_rows:
                    yield batch if batch.schema == schema else _cast(batch, schema)

    def parquet_groups(self) -> list[tuple[Path, int, int]] | None:
        """(file, row group, rows) of every Parquet row group; None for other formats."""
        if self.format != "parquet":
            return None
        groups = []
        for path in self.files:
            meta = pq.ParquetFile(path).metadata
            groups += [(path, g, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
        return groups

    def group_batches(self, path: Path, group: int, rows: int, columns: list[str]) -> Iterator[pa.RecordBatch]:
        """One Parquet row group's `columns`, in batches of at most `rows` rows."""
        reader = pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER)
        yield from reader.iter_batches(batch_size=max(int(rows), 1), row_groups=[group], columns=columns,
                                       use_threads=False)

    def _file_batches(self, path: Path, rows: int, columns: list[str] | None, schema: pa.Schema,
                      buffer_bytes: int) -> Iterator[pa.RecordBatch]:
        if self.format == "parquet":
            reader = pq.ParquetFile(path, pre_buffer=False, buffer_size=max(MIN_READ_BUFFER, buffer_bytes))
            yield from reader.iter_batches(batch_size=rows, columns=columns, use_threads=False)
        elif self.format == "arrow":
            yield from _sliced(_ipc_batches(path, columns), rows)
        else:
            block = min(CSV_BLOCK_MAX, max(MIN_READ_BUFFER, buffer_bytes))
            reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=block),
                                    convert_options=pacsv.ConvertOptions(column_types=self.schema,
                                                                         include_columns=columns))
            yield from _sliced(reader, rows)


def _ipc_batches(path: Path, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    """An Arrow IPC file's (or stream's) record batches, each read into memory of its own."""
    with pa.OSFile(str(path), "rb") as source:
        try:
            reader = ipc.open_file(source)
            batches: Iterator[pa.RecordBatch] = (reader.get_batch(i) for i in range(reader.num_record_batches))
        except pa.ArrowInvalid:
            source.seek(0)
            batches = iter(ipc.open_stream(source))
        for batch in batches:
            yield batch if columns is None else batch.select(columns)


def _sliced(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """Batches cut to at most `rows` rows (a file's own batches may be larger)."""
    for batch in batches:
        for start in range(0, batch.num_rows, rows):
            yield batch.slice(start, rows)


def _cast(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A file whose schema differs from the first file's (a column's type, its order): its
    batch in the input's schema, as the dataset API would read it."""
    return pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) for f in schema], schema=schema)
