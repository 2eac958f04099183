"""A first run's direct maps sized from the files' statistics.

A later run of a plan lets a dimension's build pipeline fill its join's direct map as it
writes the rows, over the key range the run before saw (plan/direct_builds.py); the build
step then has nothing left to do. A first run knew no range, so each such join had a build
step of its own: a hash table made, its status read back, then the direct map made from it
(about 0.5 ms each on the H200 whatever the rows; TPC-H Q2 has seven).

Parquet files carry each row group's min and max of a column. When the build key is a
column of the scanned table, their union bounds every key the pipeline can write, so the
first run fills the map over that range at once. The fill still checks every key: a NULL, a
duplicate or a key outside the range (statistics that lie) marks the fill failed and the
build step runs as before, so the answer never depends on the statistics; a build side past its share of the memory
budget is built as a grace join, as without statistics. Such a range is
kept apart (CompiledPlan.seeded_ranges) until a run confirms it: a first run does not keep
the build side in its cached table on it, nor run steadily on it (exec/steady/runs.py),
because a failed fill there costs a whole run again.
"""

from __future__ import annotations

from typing import Any

from penstock.exec.join.join_state import MAX_DIRECT_ROWS
from penstock.plan.expr import ColumnRef
from penstock.plan.physical import FilterOp, MaterializeSink, Pipeline, TableSource

# spans a direct map may cover for a table of `rows` rows (JoinState.make_direct's bounds)
MIN_SPAN, MAX_SPAN = 1 << 20, 1 << 28
# a map's bytes per key (a row number, then a bit of the presence bitmap), and the share of the
# budget a map made on statistics alone may take (under a tight budget the usual build decides)
MAP_BYTES_PER_KEY, MAP_SHARE = 4.125, 16


def statistics_range(p: Pipeline, open_table: Any, memory_limit: int | None) -> tuple[int, int] | None:
    """The key range of the direct map `p` fills, from its table's statistics: when `p`
    scans a table and only filters it, and the key it writes is one of the table's columns
    whose statistics bound it within a span a direct map may cover, in a map of at most
    1/MAP_SHARE of `memory_limit`; else None."""
    sink = p.sink
    if not (isinstance(sink, MaterializeSink) and sink.direct_build is not None and isinstance(p.source, TableSource)):
        return None
    if not all(isinstance(op, FilterOp) for op in p.ops):
        return None
    key = sink.exprs[sink.direct_build[1]]
    if not isinstance(key, ColumnRef):
        return None
    reader = open_table(p.source.table)
    value_range = getattr(reader, "value_range", None)
    rows = reader.num_rows()
    if value_range is None or rows is None or rows >= MAX_DIRECT_ROWS:
        return None
    found = value_range(p.source.names[key.index], p.source.types[key.index])
    if found is None:
        return None
    span = found[1] - found[0] + 1
    if span > max(8 * rows, MIN_SPAN) or span > MAX_SPAN:
        return None
    if memory_limit is not None and MAP_BYTES_PER_KEY * span > memory_limit // MAP_SHARE:
        return None
    return found
