"""Batched k-nearest-neighbour search by Hamming distance on a GPU: many query signatures
against a table's signature column in one pass over the rows (issue 18's batches).

The CPU's batch (knn_batch.py) keeps a heap per query in each slice. A GPU thread cannot, so
this search filters with a bound per query and selects afterwards:
1. Bounds. A sample of the first batch's rows (2^16 to 2^18, in runs of SAMPLE_RUN
   consecutive rows spread over the batch) is measured against every query
   (`knn_sample_histogram` counts the rows at each distance); a query's bound is
   the k-th least distance in the sample (`knn_sample_bounds`, on the device: the pass
   follows without the host waiting, and the bounds come back with its candidates). The
   k-th least distance of a subset is never below that of the whole table, so no answer is
   lost.
2. The pass. Every row is measured against every query, and (query, id, distance) is
   appended for each distance within the query's bound (codegen/knn_gpu_kernels.py). For 16
   queries or more the tensor cores' 1-bit MMA computes the distances; otherwise lanes of a
   warp share a row. About k x rows / sample candidates come out per query. A pass that
   finds more than its room is run again with room for all of them, so the count is exact.
   Rows go in slices sized so a launch expects at most 2^24 candidates (a large k, or
   queries the sample left without a bound, would ask for more at once).
3. The selection. Candidates are sorted by (query, distance, id), each query keeps its first
   k, and the k-th distance becomes the bound for the next batch. While the kept rows and
   candidates are few (HOST_SELECTION_ROWS) the host selects, by the same steps in numpy:
   for one query a selection on the device was a score of launches, 1 ms beside a 1.2 ms
   pass over 5 GB.
Ties go to the smaller id and NULL signatures are never candidates, as on the CPU.

Which kernel runs is knn_gpu_method.py's choice (the MMA is checked once a process).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from penstock.codegen import knn_gpu_kernels, knn_gpu_mma
from penstock.device.base import Backend
from penstock.errors import QueryError
from penstock.exec.order.knn_batch import arrow_rows, check_k
from penstock.exec.order.knn_gpu_method import METHOD_NAMES, choose_method
from penstock.exec.order.knn_gpu_steps import upload_together, within_kth

SAMPLE_ROWS = 1 << 16  # rows measured against every query for the first bounds, at least
SAMPLE_PAIRS = 1 << 22  # (query, row) pairs the sample measures: more rows for fewer queries ...
# ... up to this: a bound from 2^18 rows leaves ~760 candidates for k = 10 of 2 x 10^7 rows; 2^20
# left 190 but its sample took 0.31 ms of a 2.1 ms search (H200)
SAMPLE_ROWS_MOST = 1 << 18
SAMPLE_RUN = 512  # consecutive rows a run of the sample (knn_sample_histogram: a block's unit)
SAMPLE_SHARED_BINS = 8192  # bins a block counts in shared memory (KNN_SAMPLE_SHARED)
BOUNDS_BLOCK = 256  # threads a block on a GPU (device/gpu/backend.py): the bounds' kernel takes a block a query
SAMPLE_CELLS = 1 << 22  # histogram bins of the sample's distances held at once (16 MiB)
HOST_SELECTION_ROWS = 1 << 12  # kept rows and candidates selected among on the host, at most
SLICE_CANDIDATES = 1 << 24  # candidates one launch expects at most (256 MiB): rows are sliced to it
NO_BOUND = np.iinfo(np.int32).max
# Connection.knn_hamming on a GPU comes here; PENSTOCK_KNN_GPU_BATCH=0 makes it one top-k
# statement a query instead.
ENABLED = os.environ.get("PENSTOCK_KNN_GPU_BATCH", "1") != "0"


@dataclass
class Candidates:
    """(query, id, distance) triples, on the device or (few, read back) on the host."""
    query: Any
    id: Any
    distance: Any


@dataclass
class GpuKnnBatchSearch:
    """One search's bounds and kept rows, continued batch by batch (`add`), read by `result`."""
    backend: Backend
    queries: np.ndarray  # (B, width) uint8
    k: int
    rows_read: int = 0
    basis: int = 0  # rows the bounds are the k-th least distance among (sampled or searched)
    method: str = ""
    why: str = ""  # why not the MMA, when it was not used

    def __post_init__(self) -> None:
        check_k(self.k)
        if self.queries.ndim != 2 or len(self.queries) == 0:
            raise QueryError("knn_hamming needs at least one query signature", "22023")
        b, width = self.queries.shape
        if not self.method:  # given: the MMA's check runs a kernel by name
            self.method, self.why = choose_method(self.backend, width, b)
        self.device_queries, self.query_bits, self.bounds = upload_together(self.backend, self.restart(self.queries))

    def restart(self, queries: np.ndarray) -> list[np.ndarray]:
        """Begin a search of `queries` (after the first: as many and as wide as before): no
        row read, nothing kept. Returns what the device is to hold for it: the queries padded
        to the MMA's 8-query tiles (padding never matches: bound -1), their popcounts, and
        the bounds."""
        self.queries = queries
        b, width = queries.shape
        padded = -(-b // 8) * 8
        host = np.zeros((padded, width), np.uint8)
        host[:b] = queries
        # the bounds live on the host (the selection and the slicing read them there) and are
        # copied to the device before the next launch after a change (`device_bounds`); the
        # sample's are found on the device and read back with the first candidates
        self.host_bounds = np.full(padded, -1, np.int32)
        self.host_bounds[:b] = NO_BOUND
        query_bits = np.unpackbits(host, axis=1).sum(axis=1).astype(np.int32)
        self.bounds_stale = False
        self.kept = Candidates(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int32))
        self.kept_rank = np.zeros(0, np.int32)
        self.rows_read = self.basis = 0
        return [host, query_bits, self.host_bounds]

    @property
    def width(self) -> int:
        return int(self.queries.shape[1])

    @property
    def described(self) -> str:
        return METHOD_NAMES[self.method] + (f"; {self.why}" if self.why else "")

    def add(self, ids: pa.Array, signatures: pa.Array) -> None:
        """One record batch of the table: its ids (integers, no NULL) and signatures."""
        if len(signatures) == 0:
            return
        host_ids, sigs, valid = arrow_rows(self.backend, ids, signatures, self.width)
        self.add_arrays(self.backend.xp.asarray(host_ids), sigs, valid)

    def add_arrays(self, ids: Any, sigs: Any, valid: Any, place: bool = False) -> None:
        """Rows as device arrays: ids (int64), the signatures' bytes end to end, an Arrow
        validity bitmap (None: no NULL). `place` is the CPU's (NUMA) and means nothing here."""
        n = len(ids)
        if n == 0:
            return
        if sigs.size != n * self.width:
            raise QueryError(f"knn_hamming: signatures of {sigs.size // n} bytes against queries of "
                             f"{self.width}", "22026")
        ids = self.backend.xp.ascontiguousarray(ids, dtype=np.int64)
        start = 0
        samples = self._sample_rows(n) if self.unbounded else 0
        if samples:
            stop, count, out = self.sampled_pass(n, samples, sigs, valid, ids)
            found = self._candidates(0, stop, sigs, valid, ids, trusting=True, room=(count, out), launched=True)
            if found is not None:  # every query had a bound: the slice is done
                self._keep(found)
                self.basis = max(self.basis, self.rows_read + stop)
                start = stop
        while start < n:  # slices whose candidates stay within SLICE_CANDIDATES
            stop = min(n, start + self._slice_rows())
            self._keep(self._candidates(start, stop, sigs, valid, ids))
            self.basis = max(self.basis, self.rows_read + stop)  # bounds: the k-th least of every row so far
            start = stop
        self.rows_read += n

    def sampled_pass(self, n: int, samples: int, sigs: Any, valid: Any, ids: Any) -> tuple[int, Any, Candidates]:
        """The bounds from a sample of a batch of n rows, and the pass over its first slice,
        launched (nothing waits): the slice's end, its candidates' count and their room.
        The sample's bounds are on the device only: the slice goes as if every query had
        one, and its read-back brings them to the host (one wait, not two). Its room is made
        first, so the pass is launched right after the sample: made between them, the device
        waited ~80 us for it (an H200's profile)."""
        self.basis = max(self.basis, samples)
        stop = min(n, self._slice_rows(trusting=True))
        count, out = self._room(0, stop, trusting=True)
        self._bound_from_sample(n, samples, sigs, valid)
        self._launch_pass(0, stop, sigs, valid, ids, count, out)
        return stop, count, out

    def _slice_rows(self, trusting: bool = False) -> int:
        """Rows the next launch takes. A query without a bound (fewer than k signatures seen)
        makes every row a candidate; with bounds from `basis` rows, a row is a candidate for
        about k / basis of the queries. Slices grow as the bounds tighten, so a search with a
        large k (bounds from a sample smaller than k x rows / SLICE_CANDIDATES) never asks
        for more room than that. `trusting`: every query is taken to have its sample's bound."""
        b = len(self.queries)
        if self.unbounded and not trusting:
            return max(1 << 10, SLICE_CANDIDATES // b)
        return max(1 << 10, SLICE_CANDIDATES * self.basis // (b * self.k))

    @property
    def unbounded(self) -> bool:
        """Whether some query has no bound yet."""
        return bool((self.host_bounds[:len(self.queries)] == NO_BOUND).any())

    def lower_bounds(self, queries: np.ndarray, values: np.ndarray) -> None:
        """Each of `queries`' bounds lowered to its value where that is lower; the device's copy follows."""
        if len(queries) == 0:
            return
        self.host_bounds[queries] = np.minimum(self.host_bounds[queries], values)
        self.bounds_stale = True

    def device_bounds(self) -> Any:
        """The bounds on the device, copied there first when the host lowered some since."""
        if self.bounds_stale:
            self.bounds = self.backend.to_device_queued(self.host_bounds)
            self.bounds_stale = False
        return self.bounds

    def _kernel(self, name: str) -> Any:
        return self.backend.compile(KERNEL_SPECS[name]())  # the backend keeps built kernels by digest

    def compile_kernels(self, sigs: Any) -> None:
        """The sample's, the bounds' and the pass's kernels for these rows, built and loaded
        (before a graph records them: no module can be loaded while a capture records)."""
        self._kernel("sample")
        self._kernel("bounds")
        self._pass_kernel(sigs)

    def _pass_kernel(self, sigs: Any) -> tuple[str, Any, bool]:
        """(method, kernel, wide) of the pass over these rows: the wide loads want aligned
        rows, so misaligned ones take a thread a row; `wide`: the group kernel's 16-byte loads."""
        method = self.method if sigs.data.ptr % 8 == 0 else "bytes"
        wide = self.width % 16 == 0 and sigs.data.ptr % 16 == 0
        if method == "group":
            return method, self.backend.compile(knn_gpu_kernels.distances_group(self.width, wide)), wide
        return method, self._kernel(method), wide

    def _sample_rows(self, n: int) -> int:
        """Rows the sample of a batch of n takes: more for fewer queries (SAMPLE_PAIRS), whole
        runs; 0 when there are fewer than k to sample (the batch's every row is a candidate)."""
        samples = min(n, max(SAMPLE_ROWS, min(SAMPLE_ROWS_MOST, SAMPLE_PAIRS // len(self.queries))))
        samples -= samples % min(SAMPLE_RUN, samples)
        return samples if samples >= self.k else 0

    def _bound_from_sample(self, n: int, samples: int, sigs: Any, valid: Any) -> None:
        """Each query's bound lowered, on the device, to the k-th least distance among
        `samples` rows (_sample_rows) in runs spread over the batch: the device counts the
        sample's rows at each distance from each query (a histogram of 8 x width + 1 bins a
        query) and finds where the counts reach k (a query whose sample has fewer than k
        signatures keeps NO_BOUND)."""
        xp = self.backend.xp
        run = min(SAMPLE_RUN, samples)  # consecutive rows a run of the sample
        b, bins = len(self.queries), 8 * self.width + 1
        group = max(1, min(b, SAMPLE_SHARED_BINS // bins))  # queries a block counts in shared memory
        chunk = max(1, SAMPLE_CELLS // bins)
        bounds = self.device_bounds()
        for first in range(0, b, chunk):
            count = min(chunk, b - first)
            histogram = xp.zeros(count * bins, np.int32)
            units = samples // run * -(-count // group)
            self.backend.launch(self._kernel("sample"), units * BOUNDS_BLOCK,  # a block a unit, at most
                                [n, sigs, self.width, valid, self.device_queries[first:first + count], count, samples,
                                 run, bins, group, histogram])
            self.backend.launch(self._kernel("bounds"), count * BOUNDS_BLOCK,  # a block a query
                                [histogram, count, bins, self.k, bounds[first:first + count]])

    def _expected(self, first: int, n: int, trusting: bool) -> int:
        """Candidates the rows [first, n) are expected to give."""
        b = len(self.queries)
        if self.unbounded and not trusting:
            return b * (n - first)
        return b * self.k * (n - first) // max(self.basis, 1)

    def _room(self, first: int, n: int, trusting: bool = False, capacity: int = 0) -> tuple[Any, Candidates]:
        """A launch's candidate count (zeroed) and room for `capacity` candidates (by default,
        twice those expected)."""
        xp = self.backend.xp
        if not capacity:
            capacity = min(len(self.queries) * (n - first), max(1 << 16, 2 * self._expected(first, n, trusting)))
        return xp.zeros(1, np.uint64), Candidates(xp.empty(capacity, np.int32), xp.empty(capacity, np.int64),
                                                  xp.empty(capacity, np.int32))

    def _candidates(self, first: int, n: int, sigs: Any, valid: Any, ids: Any, trusting: bool = False,
                    room: tuple[Any, Candidates] | None = None, launched: bool = False) -> Candidates | None:
        """The rows [first, n) within their queries' bounds, all of them (a second launch
        when the first had too little room). `trusting`: the bounds are the sample's, on the
        device only; they come back with the candidates, and None says some query had none
        (its every row was a candidate: the caller starts again with the host's bounds).
        `room`: the first launch's, made by _room; `launched`: that launch is queued already."""
        expected = self._expected(first, n, trusting)
        count, out = room if room is not None else self._room(first, n, trusting)
        while True:
            if not launched:
                self._launch_pass(first, n, sigs, valid, ids, count, out)
            launched = False
            got = self._read(self.backend.to_host_many(self._pass_outputs(count, out, expected, trusting)), out,
                             trusting)
            trusting = False
            if not isinstance(got, int):
                return got
            count, out = self._room(first, n, capacity=got)

    def _launch_pass(self, first: int, n: int, sigs: Any, valid: Any, ids: Any, count: Any,
                     out: Candidates) -> None:
        """The pass over rows [first, n): its candidates appended to `out`, counted in `count`."""
        b = len(self.queries)
        method, kernel, wide = self._pass_kernel(sigs)
        tail = [len(out.query), count, out.query, out.id, out.distance]
        if method == "mma":
            tiles = -(-(n - first) // 16)
            self.backend.launch(kernel, tiles * 32,
                                [first, n, sigs, self.width // 4, valid, ids, self.device_queries, self.query_bits,
                                 len(self.device_queries) // 8, self.device_bounds()] + tail)
        elif method == "group":
            _, lanes, _ = knn_gpu_kernels.group_shape(self.width, wide)
            self.backend.launch(kernel, -(-(n - first) // knn_gpu_kernels.GROUP_ROWS) * lanes,
                                [first, n, sigs, valid, ids, self.device_queries, b, self.device_bounds()] + tail)
        else:
            self.backend.launch(kernel, n - first,
                                [first, n, sigs, self.width, valid, ids, self.device_queries, b,
                                 self.device_bounds()] + tail)

    def _pass_outputs(self, count: Any, out: Candidates, expected: int, trusting: bool) -> list[Any]:
        """What a pass's read-back brings: the count and the first candidates in one copy
        and one wait (for a bounded search, all of them: a second wait cost as much as the
        selection), and the sample's bounds when `trusting` them."""
        read = min(len(out.query), max(1 << 10, 2 * expected), 1 << 16)
        return ([count, out.query[:read], out.id[:read], out.distance[:read]]
                + ([self.bounds[:len(self.queries)]] if trusting else []))

    def _read(self, values: list[np.ndarray], out: Candidates, trusting: bool) -> Candidates | int | None:
        """A pass's read-back (_pass_outputs) taken in: its candidates (on the device past
        those read back); None when `trusting` and the sample left some query without a
        bound; or the candidates' count when it passed the room (the pass must run again)."""
        counted, query, ids_found, distance, *bounds = values
        if trusting:  # the sample's bounds, as the device found them
            self.host_bounds[:len(self.queries)] = bounds[0]
            if self.unbounded:
                return None
        found = int(counted[0])
        if found <= len(query):
            return Candidates(query[:found], ids_found[:found], distance[:found])
        if found <= len(out.query):
            return Candidates(out.query[:found], out.id[:found], out.distance[:found])
        return found

    def _keep(self, found: Candidates) -> None:
        """Each query's k best of the kept rows and the new candidates; bounds lowered to
        the k-th distance of queries that have k. On the host while they are few (a few
        thousand for a batch of tens of queries: a numpy sort beats a score of device
        launches), else on the device, by the same steps."""
        rows = len(self.kept.query) + len(found.query)
        if rows == 0:
            return
        xp = np if rows <= HOST_SELECTION_ROWS else self.backend.xp
        sources = [found] if len(self.kept.query) == 0 else [self.kept, found]  # the first: nothing kept yet
        moved = self._on_many(xp, [c.query for c in sources] + [c.id for c in sources] + [c.distance for c in sources])
        per = len(sources)
        query, ids, distance = (xp.concatenate(moved[i * per:(i + 1) * per]) for i in range(3))
        if xp is np:  # only rows within their query's k-th least distance can stay: the sort takes fewer
            within = within_kth(query, distance, len(self.queries), self.k, 8 * self.width + 1)
            if within is not None:
                query, ids, distance = query[within], ids[within], distance[within]
            order = np.lexsort((ids, distance, query))
        else:
            order = xp.lexsort(xp.stack([ids, distance.astype(np.int64), query.astype(np.int64)]))
        query, ids, distance = query[order], ids[order], distance[order]
        starts = xp.searchsorted(query, xp.arange(len(self.queries), dtype=query.dtype), side="left")
        rank = xp.arange(len(query), dtype=np.int64) - starts[query]
        keep = rank < self.k
        self.kept = Candidates(query[keep], ids[keep], distance[keep])
        self.kept_rank = (rank[keep] + 1).astype(np.int32)
        last = self.kept_rank == self.k
        self.lower_bounds(*self._on_many(np, [self.kept.query[last], self.kept.distance[last]]))

    def _on_many(self, xp: Any, arrays: list[Any]) -> list[Any]:
        """The arrays in xp's memory (numpy: the host's, in one copy and one wait; the
        backend's: the device's)."""
        if xp is not np:
            return [xp.asarray(a) for a in arrays]
        on_device = [i for i, a in enumerate(arrays) if not isinstance(a, np.ndarray)]
        moved = list(arrays)
        for i, host in zip(on_device, self.backend.to_host_many([arrays[i] for i in on_device])):
            moved[i] = host
        return moved

    def result(self) -> pa.Table:
        """query (its position among the queries), id, distance, rank (1 = nearest), ordered
        by query and rank."""
        query, ids, distance, rank = self._on_many(np, [self.kept.query, self.kept.id, self.kept.distance,
                                                        self.kept_rank])
        return pa.table({"query": query.astype(np.int32, copy=False), "id": ids,
                         "distance": distance.astype(np.int32, copy=False), "rank": rank})


KERNEL_SPECS = {"sample": knn_gpu_kernels.sample_histogram, "bounds": knn_gpu_kernels.sample_bounds,
                "bytes": knn_gpu_kernels.distances_bytes,
                "mma": knn_gpu_mma.distances_mma}
