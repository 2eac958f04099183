"""A pyarrow Table registered by the caller (db.register_arrow)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa

from penstock.io.tables import ScanBatch

MAX_BATCH_ROWS = 1 << 20


class MemoryTable:
    format = "memory"

    def __init__(self, table: pa.Table):
        self.table = table
        self.schema = table.schema
        self.files: list[Path] = []

    def num_rows(self) -> int | None:
        return self.table.num_rows

    def scan(self, columns: list[str]) -> Iterator[ScanBatch]:
        picked = self.table.select(columns)
        if not columns:
            yield ScanBatch(pa.record_batch([], names=[]), self.table.num_rows, 0, "memory")
            return
        for batch in picked.to_batches(max_chunksize=MAX_BATCH_ROWS):
            yield ScanBatch(batch, batch.num_rows, batch.nbytes, "memory")
