"""A UDF body that calls a Python function row by row, for functions no Arrow kernel has.

Strict as PostgreSQL's functions are (a NULL argument gives NULL); a constant argument
(DataFusion hands it over as an array of one value) repeats for every row; each distinct
argument tuple is computed once (a template or pattern is usually the same in every row).
"""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa


def per_row(fn: Callable[..., Any], out_type: pa.DataType) -> Callable[..., pa.Array]:
    """The UDF body applying `fn` to each row's arguments, giving `out_type`."""
    def run(*arrays: pa.Array) -> pa.Array:
        n = max(len(a) for a in arrays)
        columns = [a.to_pylist() if len(a) == n else a.to_pylist() * n for a in arrays]
        cache: dict[tuple[Any, ...], Any] = {}
        out = []
        for row in zip(*columns):
            if any(v is None for v in row):
                out.append(None)
                continue
            if row not in cache:
                cache[row] = fn(*row)
            out.append(cache[row])
        return pa.array(out, out_type)
    return run
