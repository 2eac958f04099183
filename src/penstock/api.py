"""penstock.connect(): the Python API.

A Connection owns a planning context (DataFusion), the tables registered in it, and a
device backend. `sql()` plans through DataFusion and Substrait, runs the plan with
penstock's generated kernels, and says in the result which engine produced it. A query
the executor cannot run goes whole to DataFusion, and the result says why; with
strict=True that raises penstock.Unsupported instead.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from penstock.connection.explain import explain_request, explain_text
from penstock.connection.plain_types import plain_types
from penstock.connection.prepared import Prepared, compile_planned
from penstock.connection.streaming import ResultStream, open_stream
from penstock.connection.watched import watched
from penstock.device import get_backend
from penstock.errors import FEATURE_NOT_SUPPORTED, PenstockError, QueryError, Unsupported
from penstock.exec.executor import Executor
from penstock.exec.metrics import QueryMetrics
from penstock.exec.spill.off_device import SpillLimits
from penstock.frontend import table_functions
from penstock.frontend.rewrites.clock import reads_clock
from penstock.frontend.param_slots import runtime_values, shape
from penstock.frontend.session import Frontend, fold_identifier
from penstock.frontend.table_access import check_reads, reading_as  # noqa: F401 - the server's way in
from penstock.frontend.errors.sql_errors import translate_error
from penstock.io import TableReader, open_table
from penstock.io.column_cache import cache_of, table_key
from penstock.io.parquet.device.scan import PARQUET_DECODE
from penstock.io.read.read_path import READ_PATHS
from penstock.io.memory import MemoryTable
from penstock.plan.physical import PhysicalPlan
from penstock.plan.types import to_arrow

PLAN_CACHE_SIZE = 256


@dataclass
class Result:
    """A query's result, and which engine produced it."""

    table: pa.Table
    engine: str  # penstock-cpu | penstock-gpu | datafusion
    fallback_reason: str | None = None
    metrics: QueryMetrics | None = None
    seconds: float = 0.0
    plan: PhysicalPlan | None = field(default=None, repr=False)

    def to_arrow(self) -> pa.Table:
        return self.table

    def to_pandas(self) -> Any:
        return self.table.to_pandas()

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def __repr__(self) -> str:
        why = f", fallback: {self.fallback_reason}" if self.fallback_reason else ""
        return f"<penstock.Result {self.num_rows} rows, engine {self.engine}{why}>"


def _memory_limit(memory_limit: int | None, gpu_memory_limit: int | None) -> int | None:
    """memory_limit, or its older name gpu_memory_limit; both given must agree."""
    if memory_limit is not None and gpu_memory_limit is not None and memory_limit != gpu_memory_limit:
        raise PenstockError(f"memory_limit={memory_limit} and gpu_memory_limit={gpu_memory_limit} disagree "
                            "(gpu_memory_limit is the older name of memory_limit: give one)")
    limit = memory_limit if memory_limit is not None else gpu_memory_limit
    if limit is not None and limit <= 0:
        raise PenstockError(f"memory_limit={limit}: a limit must be a positive number of bytes")
    return limit


class Connection:
    def __init__(self, device: str = "auto", strict: bool = False,
                 gpu_memory_limit: int | None = None,
                 cache: Sequence[str] | dict[str, Sequence[str] | None] | None = None,
                 cache_limit: int | None = None, io: str = "auto", parquet_decode: str = "auto",
                 memory_limit: int | None = None, host_memory_limit: int | None = None,
                 spill_dir: str | os.PathLike[str] | None = None, warm_up: bool = True):
        gpu_memory_limit = _memory_limit(memory_limit, gpu_memory_limit)
        if host_memory_limit is not None and host_memory_limit <= 0:
            raise PenstockError(f"host_memory_limit={host_memory_limit}: a limit must be a positive number of bytes")
        self.host_memory_limit = host_memory_limit
        self.spill_dir = spill_dir
        self.backend = get_backend(device, gpu_memory_limit)
        self.cache_limit = cache_limit
        self._cache_on_register: dict[str, Sequence[str] | None] = {
            fold_identifier(t): c for t, c in (cache.items() if isinstance(cache, dict) else
                                               ((t, None) for t in cache or ()))}
        self.strict = strict
        self.memory_limit = gpu_memory_limit
        self.frontend = Frontend()
        self.tables: dict[str, TableReader] = {}
        self._plans: dict[tuple[Any, ...], Prepared] = {}
        self.table_answers: dict[str, str] = {}  # a table function's registered answer -> what made it
        self.table_sources: dict[str, tuple[str, ...]] = {}  # ... -> the tables its search read
        self._lock = threading.RLock()
        if io not in READ_PATHS:
            raise PenstockError(f"io={io!r}: use one of {', '.join(READ_PATHS)}")
        if parquet_decode not in PARQUET_DECODE:
            raise PenstockError(f"parquet_decode={parquet_decode!r}: use one of {', '.join(PARQUET_DECODE)}")
        self.executor = Executor(self.backend, self._table, gpu_memory_limit, io, parquet_decode)
        self.executor.host_memory_limit, self.executor.spill_dir = host_memory_limit, spill_dir
        if warm_up:  # the process's start-up work, once (connection/process_warm_up.py)
            from penstock.connection.process_warm_up import start

            start(self.backend)

    def sort(self, source: str | os.PathLike[str], by: str, out: str | os.PathLike[str],
             descending: bool = False) -> Any:
        """Sort files larger than memory (`penstock sort`) into `out`, spilling under
        spill_dir: `by` is 'col[:asc|:desc][:nulls_first|:nulls_last],...'. On a GPU
        connection chunks sort on the GPU within memory_limit (default 4 GiB) and host
        memory_limit (default twice that); on the CPU within host_memory_limit (default
        1 GiB). Returns the report (rows, chunks, buckets, bytes spilled, device, seconds)."""
        from penstock.exec.spill.sort.external_sort import parse_keys, sort_files

        keys = parse_keys(by, descending)
        if self.backend.name == "cpu":
            return sort_files(source, keys, out, self.host_memory_limit or 1 << 30, self.spill_dir)
        return sort_files(source, keys, out, self.memory_limit or 4 << 30, self.spill_dir, device="gpu",
                          host_memory_limit=self.host_memory_limit)

    # -- catalog ------------------------------------------------------------------------------
    def register(self, name: str, path: str | os.PathLike[str], format: str | None = None,
                 schema: pa.Schema | None = None, delimiter: str | None = None, header: bool | None = None,
                 skip_bad_rows: bool = False, quote: str | None = None, escape: str | None = None,
                 encoding: str = "utf-8") -> None:
        """A file, a directory or a glob of Parquet, Arrow IPC/Feather or CSV files, as table `name`;
        `schema` declares a CSV file's column types instead of inferring them from a sample
        (a header-only file has none to infer: declare them). For CSV: `delimiter`, `quote`,
        `escape` ("" for none) and `header` (without one, columns are column1, column2, ...
        unless declared) are sniffed from the file where not given; `encoding` is utf-8,
        latin-1 or windows-1252; `skip_bad_rows` (rows that do not parse, decode or convert
        are left out and counted in `skipped_rows(name)`, instead of raising 22P02/22021/22P04).

        `name` is an SQL identifier, folded as PostgreSQL folds it: "Sales" is table sales
        (FROM Sales, FROM sales), and '"Sales"' (quoted) keeps its case (FROM "Sales")."""
        name = fold_identifier(name)
        from penstock.io.csv.reader import CsvOptions

        reader = open_table(path, format, schema, CsvOptions(delimiter, header, skip_bad_rows, quote, escape, encoding))
        location = os.fspath(path)
        extension = None
        if os.path.isdir(location):
            extension = reader.files[0].suffix
        elif not any(c in location for c in "*?[") and len(reader.files) == 1:
            extension = reader.files[0].suffix
        with self._lock:
            if getattr(reader, "stream_format", False):
                self.frontend.register_table(name, reader.read_all())  # type: ignore[attr-defined]
            else:
                self.frontend.register_files(name, reader.format, location, reader.schema, extension,
                                             getattr(reader, "options", None))
            self.tables[name] = reader
            self._plans.clear()
        if name in self._cache_on_register:
            self.cache(name, self._cache_on_register[name])

    def skipped_rows(self, name: str) -> int:
        """Rows of a CSV table registered with skip_bad_rows that its last scan left out."""
        reader = self.tables.get(name) or self.tables[fold_identifier(name)]  # an exact name, or as SQL
        return sum(getattr(reader, "skipped", {}).values())

    def register_arrow(self, name: str, table: pa.Table) -> None:
        """An Arrow table as table `name` (an identifier, folded as in register)."""
        name = fold_identifier(name)
        with self._lock:
            self.frontend.register_table(name, table)
            self.tables[name] = MemoryTable(table)
            self._plans.clear()

    def unregister(self, name: str) -> None:
        name = fold_identifier(name)
        with self._lock:
            self.frontend.deregister(name)
            reader = self.tables.pop(name, None)
            self._plans.clear()
        if reader is not None and self.executor.column_cache is not None:
            self.executor.column_cache.drop(table_key(reader))

    def cache(self, table: str, columns: Sequence[str] | None = None) -> int:
        """Keep a table's columns (all, or the named ones) in device memory across queries.

        Scans of cached columns read no storage and run as one batch. Returns the bytes the
        columns take; least recently used columns are evicted when the cache's limit
        (cache_limit, by default half the GPU's memory or memory cap) would be exceeded."""
        table = fold_identifier(table)
        if table not in self.tables:
            raise QueryError(f'relation "{table}" does not exist', "42P01")
        reader = self.tables[table]
        fields = {f.name: f for f in self.frontend.fields[table]}
        names = list(columns) if columns is not None else [f.name for f in self.frontend.fields[table]
                                                           if f.type is not None]
        for n in names:
            if n not in fields or fields[n].type is None:
                raise QueryError(f'column "{n}" of relation "{table}" does not exist or cannot be cached', "42703")
        cache = cache_of(self.backend, self.cache_limit)
        self.executor.column_cache = cache
        return cache.load(reader, names, [fields[n].type for n in names])

    def uncache(self, table: str | None = None) -> None:
        cache = self.executor.column_cache
        if cache is not None:
            cache.drop(table_key(self.tables[fold_identifier(table)]) if table is not None else None)

    def _table(self, name: str) -> TableReader:
        return self.tables[name]

    # -- queries ------------------------------------------------------------------------------
    def _plan_key(self, sql: str, params: Sequence[Any] | dict[str, Any] | None) -> tuple[Any, ...]:
        """The plan cache's key: the text, the parameters (bytea ones by length: they are bound
        at run time, frontend/param_slots.py) and the catalog's version."""
        return (sql, shape(params), self.frontend.version)

    def prepare(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Prepared:
        """The statement planned and compiled (from the plan cache when it was before). Only
        the cache is under the connection's lock: a slow statement to plan delays no other.
        Every plan's tables are checked against the thread's reader first (table_access.py)."""
        if table_functions.mentions(sql):  # a call's tables, before anything searches them
            check_reads(table_functions.read_tables(sql))
        key = self._plan_key(sql, params)
        clock = reads_clock(sql)  # now() is one value per statement: such plans are not kept
        with self._lock:
            found = None if clock else self._plans.get(key)
        if found is not None:
            check_reads(self.sources(found.planned.tables))
            return found
        self.backend.warm_up_stop.set()  # a real query: the process warm-up gives way
        if table_functions.mentions(sql):  # knn_hamming(...) in FROM: answered, then planned by name
            from penstock.connection.knn_search import answer_call

            sql = table_functions.rewrite(sql, lambda call: answer_call(self, call))
        planned = self.frontend.plan(sql, params)
        check_reads(self.sources(planned.tables))
        prepared = compile_planned(planned, self.backend,
                                   lambda t: self.tables[t].num_rows() if t in self.tables else None, self.strict)
        if clock:
            return prepared
        with self._lock:
            if len(self._plans) >= PLAN_CACHE_SIZE:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = prepared
        return prepared

    def sources(self, tables: Iterable[str]) -> list[str]:
        """The tables read, with a table function's answer standing for the tables it searched."""
        return [source for name in tables for source in self.table_sources.get(name, (name,))]

    def sql(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None,
            check: Callable[[], None] | None = None, memory_limit: int | None = None,
            spill: SpillLimits | None = None) -> Result:
        """Run one query. `check`, if given, is called between batches and steps and stops the
        query by raising (the server's cancel requests and statement timeouts use it);
        `memory_limit` caps this query's device memory below the connection's cap, `spill`
        its host memory (below the connection's) and where its spill files go. An
        EXPLAIN [ANALYZE] statement answers penstock's plan (Connection.explain), one line a row."""
        started = time.perf_counter()
        request = explain_request(sql)
        if request is not None:
            text = self.explain(request[0], request[1], params)
            return Result(pa.table({"QUERY PLAN": text.rstrip("\n").split("\n")}), self.backend.engine, None,
                          None, time.perf_counter() - started)
        metrics = QueryMetrics()
        cached = self._plan_key(sql, params) in self._plans
        prepared = self.prepare(sql, params)
        metrics.plan_cache_hit = cached
        metrics.plan_seconds = time.perf_counter() - started
        if prepared.compiled is None:
            return self._fallback(prepared, started, check, params)
        metrics.compile_seconds = 0.0 if cached else prepared.compiled.compile_seconds
        table = self.executor.run(prepared.compiled, metrics, check, memory_limit, params=runtime_values(params),
                                  spill=spill)
        table = _rename(table, prepared.planned.names)
        metrics.execute_seconds = time.perf_counter() - started - metrics.plan_seconds
        return Result(table, self.backend.engine, None, metrics, time.perf_counter() - started,
                      prepared.physical)

    def _fallback(self, prepared: Prepared, started: float, check: Callable[[], None] | None = None,
                  params: Sequence[Any] | dict[str, Any] | None = None) -> Result:
        schema, pieces = self.fallback_pieces(prepared, check, params)
        table = pa.Table.from_batches([b for piece in pieces for b in piece.to_batches()], schema)
        return Result(table, "datafusion", prepared.reason or "unknown", None, time.perf_counter() - started)

    def fallback_pieces(self, prepared: Prepared, check: Callable[[], None] | None = None,
                        params: Sequence[Any] | dict[str, Any] | None = None) -> tuple[pa.Schema, Iterator[pa.Table]]:
        """A query for DataFusion: its result's schema, and its batches as DataFusion makes
        them (a cancel stops it between batches)."""
        reason = prepared.reason or "unknown"
        if self.strict:
            raise Unsupported(reason)
        if prepared.planned.hazard:  # another engine's answer would not be PostgreSQL's: say so instead
            raise QueryError(f"penstock cannot run this query itself ({reason}), and {prepared.planned.hazard}",
                             FEATURE_NOT_SUPPORTED)
        sql, names = prepared.planned.sql, prepared.planned.names
        try:
            df = self.frontend.fallback_dataframe(prepared.planned, params)
            planned = df.schema()
            batches = df.execute_stream()
        except Exception as e:
            raise translate_error(sql, e) from None
        schema = _rename(plain_types(planned.empty_table()), names).schema

        def pieces() -> Iterator[pa.Table]:
            try:  # DataFusion's next batch may be far off (an aggregate's is its whole run): watched
                for batch in (watched(iter(batches), check) if check is not None else batches):
                    b = batch.to_pyarrow()
                    # the plan may say Utf8 where a batch has Utf8View (CASE of '' and x::text)
                    table = pa.Table.from_batches([b if b.schema.equals(planned) else b.cast(planned)])
                    yield _rename(plain_types(table), names)
            except PenstockError:
                raise
            except Exception as e:
                raise translate_error(sql, e) from None

        return schema, pieces()

    def knn_hamming(self, table: str, column: str, queries: Any, k: int = 10, id: str = "id",
                    where: str | None = None) -> Any:
        """The k rows of `table` nearest each query signature (bytes, an Arrow binary array or
        a (queries, bytes) uint8 array) by Hamming distance over the bytea `column`, ties by
        `id`, as one table: query (its position), id, distance, rank. `where`: a filter in SQL.
        Returns penstock.connection.knn_search.KnnResult (.table, .engine). docs/similarity.md."""
        from penstock.connection.knn_search import knn_hamming

        return knn_hamming(self, table, column, queries, k, id, where)

    def stream(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None,
               check: Callable[[], None] | None = None, memory_limit: int | None = None,
               spill: SpillLimits | None = None) -> ResultStream:
        """Run one query and hand its result out piece by piece (penstock/connection/streaming.py): a
        result bigger than memory can go to a client or a file as it is made."""
        return open_stream(self, sql, params, check, memory_limit, spill)

    def explain(self, sql: str, analyze: bool = False,
                params: Sequence[Any] | dict[str, Any] | None = None) -> str:
        cached = self._plan_key(sql, params) in self._plans
        started = time.perf_counter()
        prepared = self.prepare(sql, params)
        prepare_seconds = time.perf_counter() - started
        result = self.sql(sql, params) if analyze else None
        if result is not None and result.metrics is not None and not cached and prepared.compiled is not None:
            # the statement was planned and compiled above, not by the run: say what that cost
            metrics = result.metrics
            metrics.plan_cache_hit = False
            metrics.compile_seconds = prepared.compiled.compile_seconds
            metrics.plan_seconds = max(prepare_seconds - metrics.compile_seconds, 0.0)
        text = explain_text(self.backend.describe(), self.backend.engine, prepared.planned,
                            prepared.physical, prepared.compiled, prepared.reason, result)
        said = table_functions.said(sql, self.table_answers)  # lines on knn_hamming(...) calls
        if said:
            text = "\n".join([text.rstrip("\n"), *said]) + ("\n" if text.endswith("\n") else "")
        return text


def connect(device: str = "auto", strict: bool = False, gpu_memory_limit: int | None = None,
            cache: Sequence[str] | dict[str, Sequence[str] | None] | None = None,
            cache_limit: int | None = None, io: str = "auto", parquet_decode: str = "auto",
            memory_limit: int | None = None, host_memory_limit: int | None = None,
            spill_dir: str | os.PathLike[str] | None = None, warm_up: bool = True) -> Connection:
    """A connection on `device` ('auto': a GPU when one is usable, else the CPU cores).

    strict: raise penstock.Unsupported instead of falling back to DataFusion.
    memory_limit: bytes of working memory on the executing device (the GPU's; on the CPU
        backend, host memory); gpu_memory_limit is its older name. Default: no cap on the
        device's pool, and operators plan within Backend.default_budget (what the GPU had
        free at start less a tenth; half the machine's memory on the CPU).
    host_memory_limit: bytes of host memory for staging and spilling (`Connection.sort`;
        intermediate results moved off the device past memory_limit go to spill files past
        it; default: a quarter of the machine's memory).
    spill_dir: where spill files go (default: spill/ in the cache directory).
    cache: tables (or {table: [columns]}) to keep in device memory once registered.
    cache_limit: bytes the device-resident column cache may hold.
    io: how files reach the device: 'auto' (measured; on a GPU a Parquet file is read
        'mapped' once a later query scans it), 'pread', 'direct' (O_DIRECT), 'kvikio' (GPUDirect Storage /
        KvikIO, Arrow files), 'mapped' (Parquet and Arrow files on a GPU: DMA out of the
        file's page cache, registered with CUDA; io/read/mapped_files.py).
    parquet_decode: where Parquet pages are decompressed and decoded: 'device' (by the
        device's kernels; on a GPU decompressed by nvCOMP), 'host' (pyarrow's reader), 'auto'
        (the kernels, but pyarrow's reader for a scan of under 1 MiB of stored bytes).
    warm_up: the process's first connection plans a few queries on a thread of its own,
        running nothing, so the first real query does not pay the planner's and code
        generators' first use (connection/process_warm_up.py)."""
    return Connection(device=device, strict=strict, gpu_memory_limit=gpu_memory_limit, cache=cache,
                      cache_limit=cache_limit, io=io, parquet_decode=parquet_decode, memory_limit=memory_limit,
                      host_memory_limit=host_memory_limit, spill_dir=spill_dir, warm_up=warm_up)


def _rename(table: pa.Table, names: list[str]) -> pa.Table:
    return table.rename_columns(names) if table.num_columns == len(names) else table


__all__ = ["Connection", "Result", "connect", "QueryError", "Unsupported", "to_arrow"]
