"""Columns kept in device memory across queries: `db.cache(table, columns)`.

One cache per device (it hangs off the backend object, which the device registry owns), so
every connection in the process shares it. A table's cached column is the whole column,
concatenated into one device array, so a scan of cached columns is a single batch: one
kernel launch over the table. Entries are evicted least recently used first when new ones
would exceed the cache's byte limit; the columns one `cache()` call asks for are never
evicted to make room for each other, and a request that cannot fit under the limit at all
is refused (SQLSTATE 53200) before anything is evicted. Text columns with few distinct
values are kept dictionary-encoded (io/dictionary.py).

Entries are keyed by the identity of the table's reader (for an Arrow table, the table) and
the size, change time and inode of its files. The identity is watched: when the object is
garbage collected (the table was registered again, or unregistered) its entries are dropped,
so a new object that Python places at the same address can never see them. Entries of a
reader whose files have changed since they were loaded are dropped when next looked up.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from penstock.device.base import Backend, physical_memory
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.io.device_batch import Column
from penstock.io.dictionary import cache_column
from penstock.plan.types import DataType


def _owner(reader: Any) -> Any:
    """The object whose identity names a table's contents."""
    return reader if getattr(reader, "files", None) else getattr(reader, "table", reader)


def table_key(reader: Any) -> tuple[Any, ...]:
    """What identifies a table's contents: its files' sizes and change times (a changed file
    is a different table), plus the reader; hashed once, so cache lookups stay cheap."""
    files = getattr(reader, "files", None)
    if files:
        stats = [os.stat(p) for p in files]
        return ("files", id(reader), hash(tuple((s.st_size, s.st_mtime_ns, s.st_ino) for s in stats)))
    return ("memory", id(_owner(reader)))


def _identity(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return key[:2]


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
    entries: OrderedDict[tuple[Any, str], _Entry] = field(default_factory=OrderedDict)
    stats: CacheStats = field(default_factory=CacheStats)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # identities whose object has died; appended by weakref callbacks (at any moment, in any
    # thread) and purged under the lock: at once when the lock is free (`_died`), else before
    # the next lookup
    _dead: list[tuple[Any, ...]] = field(default_factory=list)
    _watched: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    # identity -> the key whose older contents _purge last dropped (lookups then skip the scan)
    _purged: dict[tuple[Any, ...], tuple[Any, ...]] = field(default_factory=dict)

    @property
    def bytes_used(self) -> int:
        return sum(e.nbytes for e in self.entries.values())

    def get(self, key: tuple[Any, ...], names: list[str]) -> tuple[list[Column], int] | None:
        """All the named columns and the row count, or None unless every one is cached."""
        with self.lock:
            self._purge(key)
            found = [self.entries.get((key, n)) for n in names]
            if not names or any(e is None for e in found):
                self.stats.misses += len(names)
                return None
            self.stats.hits += len(names)
            for n in names:
                self.entries.move_to_end((key, n))
            return [e.column for e in found], found[0].rows  # type: ignore[union-attr]

    def holds(self, key: tuple[Any, ...], names: list[str]) -> bool:
        """Whether every named column is cached (no statistics, no reordering)."""
        with self.lock:
            self._purge(key)
            return bool(names) and all((key, n) in self.entries for n in names)

    def load(self, reader: Any, names: list[str], types: list[DataType]) -> int:
        """Read the named columns of a table into the cache; returns the bytes they take.

        Raises QueryError (53200) when the columns together need more than the limit."""
        key = table_key(reader)
        with self.lock:
            self._purge(key)
            self._watch(key, _owner(reader))
            for n in names:  # asking again makes them the most recently used
                if (key, n) in self.entries:
                    self.entries.move_to_end((key, n))
            wanted = [(n, t) for n, t in zip(names, types) if (key, n) not in self.entries]
            if not wanted:
                return sum(self.entries[(key, n)].nbytes for n in names)
        started = time.perf_counter()
        arrays, rows = _read_columns(reader, [n for n, _ in wanted])
        keep = {(key, n) for n in names}
        with self.lock:
            held = sum(self.entries[k].nbytes for k in keep if k in self.entries)
            need = held + sum(a.nbytes for a in arrays.values())
            if need > self.limit:
                raise QueryError(f"the {len(names)} column(s) to cache need {_mib(need)}, more than the "
                                 f"column cache's limit of {_mib(self.limit)} (cache_limit)", OUT_OF_MEMORY)
            self._make_room(need - held, keep)
            for n, t in wanted:
                try:
                    device = cache_column(arrays[n], t, self.backend)
                except getattr(self.backend, "out_of_memory", (MemoryError,)) as e:
                    raise QueryError(f"caching column {n} ran out of device memory: {e}", OUT_OF_MEMORY) from e
                self.entries[(key, n)] = _Entry(device, device.nbytes, rows)
            self._make_room(0, keep)  # device sizes can differ a little from Arrow's
            self.stats.loads_seconds += time.perf_counter() - started
            return sum(self.entries[k].nbytes for k in keep if k in self.entries)

    def _make_room(self, need: int, keep: set[tuple[Any, str]]) -> None:
        """Evict least recently used entries outside `keep` until `need` more bytes fit."""
        used = self.bytes_used
        for k in [k for k in self.entries if k not in keep]:
            if used + need <= self.limit:
                return
            used -= self.entries.pop(k).nbytes
            self.stats.evictions += 1

    def drop(self, key: tuple[Any, ...] | None = None) -> None:
        """Forget one table's columns (by table_key), or all of them."""
        with self.lock:
            self._purge(None)
            for k in [k for k in self.entries if key is None or k[0] == key]:
                del self.entries[k]

    # -- identities ---------------------------------------------------------------------------
    def _watch(self, key: tuple[Any, ...], owner: Any) -> None:
        ident = _identity(key)
        if ident in self._watched:
            return
        try:
            finalizer = weakref.finalize(owner, self._died, ident)
            finalizer.atexit = False
            self._watched[ident] = finalizer
        except TypeError:  # cannot be watched: keep it alive, so its address is not reused
            self._watched[ident] = owner

    def _died(self, ident: tuple[Any, ...]) -> None:
        """A watched table has died: its columns go now, unless the lock is held (perhaps by
        this very thread, which a collection interrupted), and then at the next lookup.
        Waiting for a lookup left them on the device: the cache is the process's, and a
        connection that never reads it never looks up, yet its memory cap counts them (a
        finished test's 19 MiB of columns refused the next test's queries under a 2 MiB cap)."""
        self._dead.append(ident)
        if self.lock.acquire(blocking=False):
            try:
                self._purge(None)
            finally:
                self.lock.release()

    def _purge(self, key: tuple[Any, ...] | None) -> None:
        """Drop entries of dead identities, and (for `key`) entries of older file contents."""
        while self._dead:
            ident = self._dead.pop()
            self._watched.pop(ident, None)
            self._purged.pop(ident, None)
            for k in [k for k in self.entries if _identity(k[0]) == ident]:
                del self.entries[k]
        if key is not None and self._purged.get(_identity(key)) != key:
            ident = _identity(key)
            for k in [k for k in self.entries if k[0] != key and _identity(k[0]) == ident]:
                del self.entries[k]
            self._purged[ident] = key


def _read_columns(reader: Any, names: list[str]) -> tuple[dict[str, pa.Array], int]:
    """The named columns of a whole table, each as one Arrow array, and the row count."""
    chunks: dict[str, list[pa.Array]] = {n: [] for n in names}
    rows = 0
    for scan in reader.scan(names):
        rows += scan.rows
        for n in names:
            col = scan.batch.column(n)
            chunks[n].extend(col.chunks if isinstance(col, pa.ChunkedArray) else [col])
    out: dict[str, pa.Array] = {}
    for n in names:
        parts = chunks[n]
        if len({c.type for c in parts}) > 1:  # some row groups dictionary-encoded, some not
            plain = reader.schema.field(n).type
            plain = plain.value_type if pa.types.is_dictionary(plain) else plain
            parts = [c.cast(plain) for c in parts]
        column = pa.chunked_array(parts) if parts else pa.chunked_array([], type=reader.schema.field(n).type)
        if pa.types.is_dictionary(column.type):
            column = column.unify_dictionaries()
        out[n] = column.combine_chunks() if column.num_chunks else pa.array([], type=column.type)
    return out, rows


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


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
    return physical_memory() // 4
