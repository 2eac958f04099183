"""The files an out-of-core sort writes: its bucket files (Arrow IPC) and its output.

The output is written under a temporary name and renamed when whole, so a failed or
cancelled sort leaves no partial file. Parquet output is encoded the way the input was
compressed (Snappy where the input is not Parquet), and dictionary-encoded only for the
columns whose first rows repeat: trying a dictionary on every column and giving it up on
each row group, Arrow's default, makes encoding several times slower for columns of
distinct values, and encoding is the sort's slowest step after the drive.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

DICTIONARY_PROBE_ROWS = 1 << 16  # first rows of a column checked for repeats
DICTIONARY_SHARE = 0.5  # distinct values at most this share of those rows: dictionary-encoded


def open_writer(path: Path, schema: pa.Schema, parquet: bool, **options: Any) -> tuple[Any, pa.NativeFile]:
    """A Parquet or Arrow IPC writer over a file this module opens itself, so that it can
    close the file when the writer cannot (close_quietly)."""
    sink = pa.OSFile(str(path), "wb")
    return (pq.ParquetWriter(sink, schema, **options) if parquet else ipc.new_file(sink, schema)), sink


def close_quietly(writer: Any, sink: pa.NativeFile) -> None:
    """After a failure: a writer's footer may not fit the full disk, and its close then
    fails before it closes its file. The file is closed all the same: an open file keeps its
    space, and its filesystem busy, after it is deleted, until the process lets it go."""
    try:
        writer.close()
    except OSError:
        pass
    try:
        sink.close()
    except OSError:
        pass


def input_compression(files: list[Path], fmt: str) -> str:
    """The codec of the input's first Parquet column chunk, as pyarrow names it; Snappy
    for other inputs."""
    if fmt != "parquet" or not files:
        return "snappy"
    meta = pq.ParquetFile(files[0]).metadata
    if meta.num_row_groups == 0 or meta.num_columns == 0:
        return "snappy"
    codec = meta.row_group(0).column(0).compression.lower()
    return "none" if codec == "uncompressed" else codec


class OutputFile:
    """The sorted output: opened on the first rows (which choose the dictionary columns),
    written under a temporary name, renamed by finish()."""

    def __init__(self, out: Path, schema: pa.Schema, compression: str):
        self.out, self.schema, self.compression = out, schema, compression
        self.parquet = out.suffix.lower() == ".parquet"
        out.parent.mkdir(parents=True, exist_ok=True)
        self.partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
        self.opened: tuple[Any, pa.NativeFile] | None = None

    def write(self, table: pa.Table) -> None:
        if self.opened is None:
            self.open(table)
        assert self.opened is not None
        self.opened[0].write_table(table)

    def open(self, first: pa.Table | None) -> None:
        options: dict[str, Any] = {}
        if self.parquet:
            options = {"compression": self.compression, "use_dictionary": repeating_columns(first)}
        self.opened = open_writer(self.partial, self.schema, self.parquet, **options)

    def finish(self) -> None:
        if self.opened is None:  # no rows: an empty file of the input's schema
            self.open(None)
        assert self.opened is not None
        writer, sink = self.opened
        self.opened = None
        writer.close()
        sink.close()
        os.replace(self.partial, self.out)

    def discard(self) -> None:
        if self.opened is not None:
            close_quietly(*self.opened)
            self.opened = None
        self.partial.unlink(missing_ok=True)


def repeating_columns(table: pa.Table | None) -> list[str]:
    """Columns whose first rows hold few distinct values: those worth a dictionary."""
    if table is None or table.num_rows == 0:
        return []
    probe = table.slice(0, DICTIONARY_PROBE_ROWS)
    names = []
    for name in probe.schema.names:
        column = probe.column(name)
        try:
            distinct = pc.count_distinct(column).as_py()
        except pa.ArrowNotImplementedError:  # nested types: Arrow's default
            names.append(name)
            continue
        if distinct <= DICTIONARY_SHARE * probe.num_rows:
            names.append(name)
    return names
