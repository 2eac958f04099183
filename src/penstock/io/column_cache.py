"""Columns kept in device memory across queries: `db.cache(table, columns)`.

One cache per device (it hangs off the backend object, which the device registry owns), so
every connection in the process shares it. A table's cached column is the whole column,
concatenated into one device array, so a scan of cached columns is a single batch: one
kernel launch over the table. Entries are evicted least recently used first when new ones
would exceed the cache's byte limit.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from penstock.device.base import Backend
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.io.device_batch import Column, column_from_arrow
from penstock.plan.types import DataType


def table_key(reader: Any) -> tuple[Any, ...]:
    """What identifies a table's contents: its files' sizes and change times (a changed file
    is a different table), plus the reader; hashed once, so cache lookups stay cheap."""
    files = getattr(reader, "files", None)
    if files:
        stats = [os.stat(p) for p in files]
        return ("files", id(reader), hash(tuple((s.st_size, s.st_mtime_ns, s.st_ino) for s in stats)))
    return ("memory", id(getattr(reader, "table", reader)))


@dataclass
class CacheStats:
    hits: int = 0  # column reads served from the cache
    misses: int = 0
    evictions: int = 0
    loads_seconds: float = 0.0


@dataclass
class _Entry:
    column: Column
    nbytes: int
    rows: int


@dataclass
class ColumnCache:
    backend: Backend
    limit: int
    entries: "OrderedDict[tuple[Any, str], _Entry]" = field(default_factory=OrderedDict)
    stats: CacheStats = field(default_factory=CacheStats)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def bytes_used(self) -> int:
        return sum(e.nbytes for e in self.entries.values())

    def get(self, key: tuple[Any, ...], names: list[str]) -> tuple[list[Column], int] | None:
        """All the named columns and the row count, or None unless every one is cached."""
        with self.lock:
            found = [self.entries.get((key, n)) for n in names]
            if not names or any(e is None for e in found):
                self.stats.misses += len(names)
                return None
            self.stats.hits += len(names)
            for n in names:
                self.entries.move_to_end((key, n))
            return [e.column for e in found], found[0].rows  # type: ignore[union-attr]

    def load(self, reader: Any, names: list[str], types: list[DataType]) -> int:
        """Read the named columns of a table into the cache; returns the bytes they take."""
        key = table_key(reader)
        wanted = [(n, t) for n, t in zip(names, types) if (key, n) not in self.entries]
        if not wanted:
            return sum(self.entries[(key, n)].nbytes for n in names)
        started = time.perf_counter()
        chunks: dict[str, list[pa.Array]] = {n: [] for n, _ in wanted}
        rows = 0
        for scan in reader.scan([n for n, _ in wanted]):
            rows += scan.rows
            for n, _ in wanted:
                chunks[n].extend(scan.batch.column(n).chunks if isinstance(scan.batch.column(n), pa.ChunkedArray)
                                 else [scan.batch.column(n)])
        for n, t in wanted:
            parts = chunks[n]
            if len({c.type for c in parts}) > 1:  # some row groups dictionary-encoded, some not
                plain = reader.schema.field(n).type
                plain = plain.value_type if pa.types.is_dictionary(plain) else plain
                parts = [c.cast(plain) for c in parts]
            column = pa.chunked_array(parts) if parts else pa.chunked_array([], type=reader.schema.field(n).type)
            if pa.types.is_dictionary(column.type):
                column = column.unify_dictionaries()
            array = column.combine_chunks() if column.num_chunks else pa.array([], type=column.type)
            need = array.nbytes
            with self.lock:
                self._make_room(need, f"{n}")
                device = column_from_arrow(array, t, self.backend)
                self.entries[(key, n)] = _Entry(device, device.nbytes, rows)
        self.stats.loads_seconds += time.perf_counter() - started
        return sum(self.entries[(key, n)].nbytes for n in names)

    def _make_room(self, need: int, what: str) -> None:
        if need > self.limit:
            raise QueryError(f"column {what} needs {need / 2**20:.0f} MiB, more than the column cache's "
                             f"limit of {self.limit / 2**20:.0f} MiB", OUT_OF_MEMORY)
        while self.entries and self.bytes_used + need > self.limit:
            self.entries.popitem(last=False)
            self.stats.evictions += 1

    def drop(self, key: tuple[Any, ...] | None = None) -> None:
        with self.lock:
            for k in [k for k in self.entries if key is None or k[0] == key]:
                del self.entries[k]


def cache_of(backend: Backend, limit: int | None = None) -> ColumnCache:
    """The backend's column cache, created on first use (limit: bytes; default half of the
    GPU's memory or of its memory cap, or 25 % of host memory for the CPU backend)."""
    cache = getattr(backend, "column_cache", None)
    if cache is None:
        if limit is None:
            limit = default_limit(backend)
        cache = ColumnCache(backend, limit)
        backend.column_cache = cache  # type: ignore[attr-defined]
    elif limit is not None:
        cache.limit = limit
    return cache


def default_limit(backend: Backend) -> int:
    cap = getattr(backend, "memory_limit", None) or getattr(backend, "total_memory", None)
    if cap:
        return int(cap) // 2
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError):
        return 4 << 30
