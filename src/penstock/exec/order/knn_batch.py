"""Batched k-nearest-neighbour search by Hamming distance: many query signatures against a
table's signature column in one pass over it (issue 18's batches).

A single query is a top-k statement (`ORDER BY hamming_distance(sig, $1), id LIMIT k`,
plan/top_k.py), which reads the table once per query. A batch of B queries read that way
reads it B times; here the rows stream through once and each row is compared with every
query while it is in cache (codegen/knn_kernels.py), the way FAISS's IndexBinaryFlat
searches a batch. The rows come as Arrow record batches (the connection's stream of a
`SELECT id, sig FROM t WHERE ...`), so filters and every table format work as in SQL.

The answer per query: the k rows of least distance, ties broken by id (ascending), NULL
signatures never among them, fewer than k rows when the table has fewer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from penstock.codegen.knn_kernels import knn_hamming_batch, scratch_stride
from penstock.device.base import Backend
from penstock.device.cpu import numa
from penstock.errors import QueryError
from penstock.io.device_batch import column_from_arrow
from penstock.plan.types import binary

MAX_K = 100_000  # as the single-query top-k's bound (plan/top_k.py)
NO_DISTANCE, NO_ID = np.iinfo(np.int32).max, np.iinfo(np.int64).max


def check_k(k: int) -> None:
    if not 1 <= k <= MAX_K:
        raise QueryError(f"k must be between 1 and {MAX_K:,}, not {k}", "22023")


@dataclass
class KnnBatchSearch:
    """The slices' heaps of one search, continued batch by batch (`add`), merged by `result`."""
    backend: Backend
    queries: np.ndarray  # (B, width) uint8
    k: int
    slices: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
    rows_read: int = 0
    numa_nodes: int = 1  # nodes the slices' threads run on (several: each on its slice's node)

    def __post_init__(self) -> None:
        check_k(self.k)
        if self.queries.ndim != 2 or len(self.queries) == 0:
            raise QueryError("knn_hamming needs at least one query signature", "22023")
        self.queries = np.ascontiguousarray(self.queries, dtype=np.uint8)
        shape = (self.slices, len(self.queries), self.k)
        self.best_d = np.full(shape, NO_DISTANCE, np.int32)
        self.best_id = np.full(shape, NO_ID, np.int64)
        self.scratch = np.zeros((self.slices, scratch_stride(len(self.queries))), np.int32)
        self.kernel = self.backend.compile(knn_hamming_batch())
        machine = numa.nodes() if self.backend.name == "cpu" else []
        self.slice_cpus: np.ndarray | None = None
        self.cpu_stride = 0
        if len(machine) > 1:
            self.numa_nodes = len(machine)
            self.slice_cpus, self.cpu_stride = numa.slice_cpu_table(self.slices, machine)
            self.slice_node_ids = [machine[k].id for k in numa.slice_nodes(self.slices, machine)]

    @property
    def width(self) -> int:
        return int(self.queries.shape[1])

    def add(self, ids: pa.Array, signatures: pa.Array) -> None:
        """One record batch of the table: its ids (integers, no NULL) and signatures."""
        if len(signatures) == 0:
            return
        self.add_arrays(*arrow_rows(self.backend, ids, signatures, self.width))

    def add_arrays(self, ids: np.ndarray, sigs: np.ndarray, valid: np.ndarray | None, place: bool = False) -> None:
        """Rows as arrays: ids, the signatures' bytes end to end, an Arrow validity bitmap
        (None: no NULL). A cached table's columns come this way, without a copy; `place`
        (for them): on several NUMA nodes, each slice's rows move to its node, once."""
        n = len(ids)
        if sigs.size != n * self.width:
            raise QueryError(f"knn_hamming: signatures of {sigs.size // max(n, 1)} bytes against queries of "
                             f"{self.width}", "22026")
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if place and self.slice_cpus is not None:
            self._place(sigs, n)
        self.backend.launch(self.kernel, self.slices, [n, sigs, self.width, valid, ids, self.queries,
                                                        len(self.queries), self.k, self.slices, self.best_d,
                                                        self.best_id, self.scratch, self.slice_cpus, self.cpu_stride,
                                                        self.scratch.shape[1]])
        self.rows_read += n

    def _place(self, sigs: np.ndarray, n: int) -> None:
        """The rows of each slice onto its slice's node, once per array (the backend
        remembers which it placed, by address, size and slices)."""
        placed = getattr(self.backend, "numa_placed", None)
        if placed is None:
            placed = self.backend.numa_placed = set()  # type: ignore[attr-defined]
        key = (sigs.ctypes.data, sigs.nbytes, self.slices)
        if key in placed:
            return
        parts = [(n * s // self.slices * self.width, n * (s + 1) // self.slices * self.width, self.slice_node_ids[s])
                 for s in range(self.slices)]
        numa.bind_memory(sigs, parts)
        placed.add(key)

    def result(self) -> pa.Table:
        """query (its position among the queries), id, distance, rank (1 = nearest), ordered
        by query and rank."""
        b, k = len(self.queries), self.k
        d = self.best_d.transpose(1, 0, 2).reshape(b, -1)
        ids = self.best_id.transpose(1, 0, 2).reshape(b, -1)
        order = np.lexsort((ids, d), axis=1)[:, :k]  # by distance, then id
        d, ids = np.take_along_axis(d, order, 1), np.take_along_axis(ids, order, 1)
        kept = d != NO_DISTANCE
        query = np.broadcast_to(np.arange(b, dtype=np.int32)[:, None], d.shape)
        rank = np.broadcast_to(np.arange(1, k + 1, dtype=np.int32)[None, :], d.shape)
        return pa.table({"query": query[kept], "id": ids[kept], "distance": d[kept], "rank": rank[kept]})


def query_matrix(queries: Any) -> np.ndarray:
    """Query signatures (a list of bytes, a fixed-size binary Arrow array, or a (B, width)
    uint8 array) as a (B, width) uint8 matrix; they must share one length."""
    if isinstance(queries, np.ndarray):
        if queries.dtype != np.uint8 or queries.ndim != 2:
            raise QueryError("query signatures as an array must be uint8 of shape (queries, bytes)", "22023")
        return queries
    if isinstance(queries, (pa.Array, pa.ChunkedArray)):
        queries = queries.to_pylist()
    values = [bytes(q) for q in queries if q is not None]
    if len(values) != len(queries):
        raise QueryError("knn_hamming: a query signature is NULL", "22004")
    if not values:
        raise QueryError("knn_hamming needs at least one query signature", "22023")
    if len({len(v) for v in values}) != 1:
        raise QueryError("knn_hamming: query signatures of different lengths", "22026")
    return np.frombuffer(b"".join(values), np.uint8).reshape(len(values), -1)


def arrow_rows(backend: Backend, ids: pa.Array, signatures: pa.Array, width: int) -> tuple[np.ndarray, Any, Any]:
    """A record batch's rows as a search takes them: the ids as int64 on the host (22004 for a
    NULL), the signatures and their validity as the backend holds a bytea column."""
    sigs, valid = fixed_bytes(backend, signatures, width)
    if ids.null_count:
        raise QueryError("knn_hamming: the id column has NULLs", "22004")
    return ids.cast(pa.int64()).to_numpy(zero_copy_only=False), sigs, valid


def fixed_bytes(backend: Backend, signatures: pa.Array, width: int) -> tuple[Any, Any]:
    """The signatures as the backend holds a bytea column (io/device_batch.column_from_arrow):
    their bytes end to end and an Arrow validity bitmap (None: no NULL); 22026 when they are
    not `width` bytes long."""
    if isinstance(signatures, pa.ChunkedArray):
        signatures = signatures.combine_chunks()
    t = signatures.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        lengths = pc.binary_length(signatures).drop_null()
        if len(lengths) and (pc.min(lengths).as_py() != width or pc.max(lengths).as_py() != width):
            raise QueryError(f"knn_hamming: a signature's length differs from the queries' {width} bytes", "22026")
        signatures = signatures.cast(pa.binary(width))
    elif not pa.types.is_fixed_size_binary(t):
        raise QueryError(f"knn_hamming: the signature column is {t}, not bytea", "42804")
    elif t.byte_width != width:
        raise QueryError(f"knn_hamming: signatures of {t.byte_width} bytes against queries of {width}", "22026")
    column = column_from_arrow(signatures, binary(width), backend)
    return column.values, column.validity
