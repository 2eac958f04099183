"""A bounded top-k whose first sort key is a Hamming distance, on a GPU: the words' pass
(exec/order/top_k_bound.py's mode 0) by the k-NN search's lanes-sharing-a-row kernel.

`SELECT id, hamming_distance(sig, $1) AS d FROM t ORDER BY d, id LIMIT k` records every
row's word before the bound is picked. The generic scan kernel measures a row a thread, each
thread's loads 256 bytes from its neighbour's: 2.2 ms for 5 GB of signatures on an H200,
where the lanes-sharing-a-row kernel (codegen/knn_gpu_kernels.py) reads them in 1.14 ms.
It takes the pass when the pipeline has no filter (every row reaches the sink), the key is
hamming_distance of a fixed_size_binary column of the scan and a bytea parameter or literal
of the same length (any other length raises 22026 in the generic kernel, as it should), the
rows are whole 8-byte words, and the device is a GPU. Everything after the words (the bound,
the rewrite of the rows within it, the sort) stays as it is. PENSTOCK_TOP_K_HAMMING=0 turns
it off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from penstock.codegen import knn_gpu_kernels
from penstock.io.device_batch import Batch
from penstock.plan.expr import Call, ColumnRef, Expr, Literal, Param
from penstock.plan.physical import TopKBound
from penstock.plan.types import Kind

if TYPE_CHECKING:
    from penstock.exec.pipeline.runner import PipelineRunner

ENABLED = os.environ.get("PENSTOCK_TOP_K_HAMMING", "1") != "0"
SIGN_BIT = 1 << 63  # kernels/top_k.h: order_word_int(d) = d ^ SIGN_BIT
WORD_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class HammingKey:
    """The sort key hamming_distance(column, query): the scan's column and the query's
    expression (a parameter or a literal)."""

    column: int
    query: Expr


def hamming_key(key: Expr) -> HammingKey | None:
    """The key as hamming_distance(column, parameter or literal), either way round; None if not."""
    if not (isinstance(key, Call) and key.fn == "hamming_distance" and len(key.args) == 2):
        return None
    for column, query in (key.args, key.args[::-1]):
        if isinstance(column, ColumnRef) and isinstance(query, (Param, Literal)):
            return HammingKey(column.index, query)
    return None


class HammingWords:
    """One run's words' passes (a batch each): the query signature goes to the device once
    and stays referenced while the run's kernels read it (an array let go at once could go
    back to the memory pool while the kernel reading it is still queued)."""

    def __init__(self, top_k: TopKBound) -> None:
        self.top_k = top_k
        self.key = hamming_key(top_k.key) if ENABLED else None
        self.query: bytes | None = None
        self.device_query: Any = None

    def record(self, runner: "PipelineRunner", batch: Batch) -> Any:
        """Every row's word, written by the lanes-sharing-a-row kernel (into an array it need
        not fill first: the kernel writes every row); None, having launched nothing, when the
        batch or the pipeline does not allow it (the caller runs the scan's kernel instead)."""
        key = self.key
        if key is None or runner.be.name != "gpu" or runner.p.ops or key.column >= len(batch.columns):
            return None
        column = batch.columns[key.column]
        width = column.type.width or 0
        query = _query_bytes(runner, key.query)
        if column.type.kind is not Kind.BINARY or query is None or len(query) != width or width % 8 or \
                column.values is None or column.values.data.ptr % 8:
            return None
        backend = runner.be
        words = backend.xp.empty(batch.length, dtype=np.uint64)
        if query != self.query:
            self.query, self.device_query = query, backend.to_device_queued(np.frombuffer(query, np.uint8).copy())
        wide = width % 16 == 0 and column.values.data.ptr % 16 == 0
        _, lanes, _ = knn_gpu_kernels.group_shape(width, wide)
        rows = batch.length
        backend.launch(backend.compile(knn_gpu_kernels.distance_words(width, wide)),
                       -(-rows // knn_gpu_kernels.GROUP_ROWS) * lanes,
                       [rows, column.values, column.validity, self.device_query, int(self.top_k.descending),
                        int(self.top_k.nulls_first), words])
        if runner.count_rows:  # no filter: every operator saw every row, as the scan's kernel counts them
            runner.metrics.add_counters([rows] * runner.n_counters)
        runner.metrics.top_k_words_by = "Hamming distances by lanes sharing a row"
        return words

    def known_range(self, batch: Batch) -> tuple[int, int, int] | None:
        """(count, least, greatest) of the words `record` just wrote, when no signature is
        NULL: every row has a word, and each lies within the distances' range, so the bound's
        search need not measure them (exec/order/top_k_bound.kth_word); None otherwise."""
        assert self.key is not None
        column = batch.columns[self.key.column]
        if column.validity is not None:  # a NULL's word lies outside the distances' range
            return None
        least, greatest = hamming_words_range(column.type.width or 0, self.top_k.descending)
        return batch.length, least, greatest


def hamming_words_range(width: int, descending: bool) -> tuple[int, int]:
    """The least and greatest words (kernels/top_k.h's top_k_word of order_word_int(d)) a
    Hamming distance between `width`-byte values can take: d from 0 to 8 x width."""
    least, greatest = SIGN_BIT, SIGN_BIT + 8 * width
    return (WORD_MASK ^ greatest, WORD_MASK ^ least) if descending else (least, greatest)


def _query_bytes(runner: "PipelineRunner", query: Expr) -> bytes | None:
    """The query signature's bytes, None when it is NULL or not bytes."""
    if isinstance(query, Literal):
        value = query.value
    else:
        assert isinstance(query, Param)
        found = runner.bind_context.runtime.get(query.slot)
        if found is None:
            return None
        value, is_null = found
        if is_null:
            return None
    return bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else None

