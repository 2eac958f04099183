"""Arrow IPC files (and Feather v2): record batches read in place through a memory map,
so only the pages of referenced columns are touched. The IPC stream format is read too."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from penstock.errors import FileError
from penstock.io.arrow.metadata import map_for_metadata, record_batches
from penstock.io.tables import ScanBatch, check_same_schema

_MAGIC = b"ARROW1"


def _is_file_format(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(6) == _MAGIC


def _batches(path: Path) -> Iterator[pa.RecordBatch]:
    try:
        source = pa.memory_map(str(path))
        if _is_file_format(path):
            reader = ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)
        else:
            yield from ipc.open_stream(source)
    except (OSError, pa.ArrowException) as e:
        raise FileError(f"could not read Arrow file {path}: {e}", str(path)) from e


def _schema(path: Path) -> pa.Schema:
    try:
        source = pa.memory_map(str(path))
        return (ipc.open_file(source) if _is_file_format(path) else ipc.open_stream(source)).schema
    except (OSError, pa.ArrowException) as e:
        raise FileError(f"could not read Arrow file {path}: {e}", str(path)) from e


class ArrowTable:
    format = "arrow"

    def __init__(self, files: list[Path]):
        self.files = files
        self.schema = check_same_schema(files, [_schema(f) for f in files])
        self.stream_format = not all(_is_file_format(f) for f in files)
        self._rows: int | None = None

    def num_rows(self) -> int | None:
        if self._rows is None:
            total = 0
            for path in self.files:
                if not _is_file_format(path):
                    return None
                buffer = map_for_metadata(path)
                with ThreadPoolExecutor(8) as pool:  # each batch's row count is a read on a cold file
                    total += sum(b.num_rows for b in record_batches(ipc.open_file(buffer), buffer, pool))
            self._rows = total
        return self._rows

    def scan(self, columns: list[str]) -> Iterator[ScanBatch]:
        for path in self.files:
            for batch in _batches(path):
                picked = batch.select(columns) if columns else pa.record_batch([], names=[])
                size = sum(buf.size for col in picked.columns for buf in col.buffers() if buf is not None)
                yield ScanBatch(picked, batch.num_rows, size, str(path))

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches([b for f in self.files for b in _batches(f)], schema=self.schema)
