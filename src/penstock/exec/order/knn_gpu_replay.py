"""A k-NN search over cached columns as one CUDA graph: recorded at its first run, replayed
by later ones (`Connection.knn_hamming` on a GPU, docs/similarity.md).

One query's pass over 20 million 2048-bit signatures keeps an H200 busy 1.2 ms; the host's
Python around its launches, memsets and read-back added 0.5-0.9 ms, where 80% of the
device's copy ceiling is about 1.5 ms. A replay is one launch: the graph uploads the
queries from a pinned block the host has just written, clears the counts, takes the sample,
finds the bounds, runs the pass and packs the count, the first candidates and the bounds into
pinned memory, as GpuKnnBatchSearch's first slice does step by step. The host then selects
as usual. When the pass's outcome needs more than the recording holds (the sample left a
query without a bound, or the candidates passed the recorded room), the search runs the
usual way instead; the answers are the same.

A recording is kept per (table, column, id, batch size, k), with the connection's other
graphs (Executor.keep_replay: a budget of device memory, dropped when memory runs short).
It holds weak references to the cached columns it reads: a replay first checks that the
cache still holds those very columns, and records again if not.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from penstock.device.base import Readback
from penstock.exec.order.knn_gpu_batch import Candidates, GpuKnnBatchSearch
from penstock.exec.order.knn_gpu_steps import packed_together, upload_together

RECORDINGS = 32  # (table, column, id, batch, k) a connection remembers, the least recent dropped first
MISSES = 2  # replays in a row that end the usual way before a search is no longer replayed


@dataclass
class KnnReplay:
    """One search's graph and what it points into."""
    graph: Any
    search: GpuKnnBatchSearch  # its device arrays are the graph's; restarted for each replay
    staged: np.ndarray  # pinned: the block the graph's first copy uploads (queries, popcounts, bounds)
    room: Candidates  # where the pass appends its candidates
    readback: Readback  # the count, the first candidates and the sample's bounds, after each launch
    columns: list[weakref.ref[Any]]  # the cached columns (ids, signatures) the graph reads
    kept: list[Any]  # the capture's device allocations and pinned sources
    nbytes: int
    rows: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def holds(self, columns: list[Any]) -> bool:
        return all(ref() is column for ref, column in zip(self.columns, columns))

    def run(self, backend: Any, queries: np.ndarray) -> GpuKnnBatchSearch | None:
        """The search of `queries` by one launch of the graph and the host's selection; None
        when its pass needs what the recording does not hold (the caller searches the usual
        way). The caller holds `lock` until it has read the search's result."""
        block, _ = packed_together(self.search.restart(queries))
        self.staged[...] = block
        backend.launch_graph(self.graph)
        found = self.search._read(self.readback.wait(), self.room, trusting=True)
        if not isinstance(found, Candidates):
            return None
        self.search.basis = self.search.rows_read = self.rows
        self.search._keep(found)
        return self.search


@dataclass
class KnnRecording:
    """A search's place among the executor's graphs (Executor.keep_replay sets `replay`)."""
    replay: KnnReplay | None = None
    refused: str = ""  # why it is not recorded (again): see `record` and `search_cached`
    misses: int = 0  # replays in a row whose outcome sent the search the usual way


@dataclass
class KnnRecordings:
    """A connection's recordings (Executor.knn_recordings), the least recent dropped first
    past RECORDINGS."""
    entries: OrderedDict[tuple[Any, ...], KnnRecording] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: tuple[Any, ...]) -> KnnRecording:
        with self.lock:
            recording = self.entries.get(key)
            if recording is None:
                recording = self.entries[key] = KnnRecording()
                while len(self.entries) > RECORDINGS:
                    self.entries.popitem(last=False)
            self.entries.move_to_end(key)
            return recording


def search_cached(executor: Any, key: tuple[Any, ...], columns: list[Any], rows: int, queries: np.ndarray,
                  k: int) -> tuple[Any, str]:
    """(answer, how): the answer table (GpuKnnBatchSearch.result) of a search over cached
    columns (ids, signatures) by its graph, recorded now if need be, and how it ran; or
    (None, why not) when it must run the usual way: another thread replays or records it,
    or it is not recorded (`KnnRecording.refused`, '' when that says nothing the engine
    need tell: the sample or the room did not suffice)."""
    recording = executor.knn_recordings.get(key + (queries.shape, k))
    replay, how = recording.replay, "one CUDA graph, replayed"
    if replay is not None and not replay.holds(columns):
        recording.replay = replay = None
    if replay is None:
        if recording.refused:
            return None, recording.refused
        replay = record(recording, executor.backend, columns, rows, queries, k)
        if replay is None:
            return None, recording.refused
        executor.keep_replay(recording, replay)
        if recording.replay is None:  # past the graphs' budget: not kept, not recorded again
            recording.refused = "not a CUDA graph: past the budget of the connection's graphs"
        how = "one CUDA graph, recorded"
    if not replay.lock.acquire(blocking=False):
        return None, ""
    try:
        search = replay.run(executor.backend, queries)
        if search is None:  # twice in a row: the table's rows defeat the sample, so replays stop
            recording.misses += 1
            if recording.misses >= MISSES:
                recording.replay, recording.refused = None, "not a CUDA graph: the sample does not bound it"
            return None, ""
        recording.misses = 0
        return search.result(), f"{search.described}; {how}"
    finally:
        replay.lock.release()


def record(recording: KnnRecording, backend: Any, columns: list[Any], rows: int, queries: np.ndarray,
           k: int) -> KnnReplay | None:
    """The search's first slice recorded as a graph (not yet launched); None when the
    backend records no graphs now (another thread is recording), or never for this search
    (`recording.refused` says why): it is not one slice (a batch of many queries with a
    large k), or the capture failed."""
    ids_column, signatures = columns
    sigs, valid = signatures.values.reshape(-1), signatures.validity
    ids = ids_column.values[:rows]
    # narrower ids: a copy, which the graph keeps. Never the cache's own array: kept, it would
    # hold the column's memory after the cache let it go (the columns are weakly referenced)
    copied = [backend.xp.ascontiguousarray(ids, dtype=np.int64)] if ids.dtype != np.int64 else []
    ids = copied[0] if copied else ids
    search = GpuKnnBatchSearch(backend, queries, k)  # the method chosen (and checked) before recording
    samples = search._sample_rows(rows)
    if samples == 0 or sigs.size != rows * search.width:
        recording.refused = "not a CUDA graph: fewer rows than k" if samples == 0 else \
            f"not a CUDA graph: {sigs.size} signature bytes for {rows} rows"
        return None
    search.compile_kernels(sigs)  # a module cannot be loaded while a capture records
    capture = backend.begin_capture()
    if capture is None:
        return None
    staged: list[np.ndarray] = []

    def put(block: np.ndarray) -> Any:
        device, pinned = capture.upload_staged(block)
        staged.append(pinned)
        return device

    try:
        search.device_queries, search.query_bits, search.bounds = upload_together(backend, search.restart(queries),
                                                                                  put)
        stop, count, room = search.sampled_pass(rows, samples, sigs, valid, ids)
        readback = backend.readback(search._pass_outputs(count, room, search._expected(0, stop, True), True))
        if stop < rows:
            backend.abort_capture(capture)
            recording.refused = "not a CUDA graph: the search takes more than one slice"
            return None
        graph = backend.end_capture(capture)
    except Exception as e:  # a capture the driver refuses: the search runs the usual way, and says why
        backend.abort_capture(capture)
        recording.refused = f"not a CUDA graph: recording it failed ({type(e).__name__}: {str(e)[:160]})"
        return None
    return KnnReplay(graph, search, staged[0], room, readback, [weakref.ref(c) for c in columns],
                     capture.kept + capture.pinned + copied, capture.kept_bytes + sum(c.nbytes for c in copied), rows)
