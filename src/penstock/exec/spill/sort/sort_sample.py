"""The sample of keys an out-of-core sort chooses its splitters from.

Only the key columns are read, a batch at a time, and every k-th row kept, so the sample
holds at most its own rows and one batch of keys. From Parquet the keys of SAMPLE_GROUPS
row groups spread over the input are read (a sample of the whole file at a fraction of its
reading); from other formats all of them.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pyarrow as pa

from penstock.exec.spill.sort.sort_input import SortInput
from penstock.exec.spill.sort.sort_plan import SAMPLE_ROWS

SAMPLE_GROUPS = 32  # Parquet row groups read for the sample, spread over the input


def sample_input(source: SortInput, names: list[str], keep: int, batch_rows: int) -> pa.Table:
    """About `keep` rows of the key columns `names` of `source`, in batches of `batch_rows`."""
    schema = pa.schema([source.schema.field(n) for n in names])
    groups = source.parquet_groups()
    if groups is None:
        return sample_keys(source.batches(batch_rows, names), source.rows, schema, keep)
    if len(groups) > SAMPLE_GROUPS:
        groups = [groups[int(i * len(groups) / SAMPLE_GROUPS)] for i in range(SAMPLE_GROUPS)]
    # the row groups' own counts: a count of their files' rows made the step 32 times too
    # long and 2 x 10^9 rows' sample 70 keys (70 buckets where 192 were planned)
    scanned = sum(rows for _path, _group, rows in groups)
    parts = (batch for path, group, _rows in groups for batch in source.group_batches(path, group, batch_rows, names))
    return sample_keys(parts, scanned, schema, keep)


def sample_keys(parts: Iterable[pa.Table | pa.RecordBatch], rows: int, schema: pa.Schema,
                keep: int = SAMPLE_ROWS) -> pa.Table:
    """About `keep` rows of `parts` (holding `rows` rows in all): every k-th row."""
    step = max(1, rows // max(keep, 1))
    kept: list[pa.Table] = []
    seen = 0
    for part in parts:
        start = (-seen) % step
        if start < part.num_rows:
            table = pa.Table.from_batches([part]) if isinstance(part, pa.RecordBatch) else part
            kept.append(table.select(schema.names).take(pa.array(np.arange(start, part.num_rows, step))))
        seen += part.num_rows
    return pa.concat_tables(kept) if kept else schema.empty_table()
