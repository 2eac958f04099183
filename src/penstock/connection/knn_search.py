"""`Connection.knn_hamming`: the k nearest rows of each of many query signatures by Hamming
distance, one answer table for the batch (docs/similarity.md).

The batch is one pass over the table on either device: the connection takes the cached
columns as they are, or streams `SELECT id, sig FROM t [WHERE ...]`, and every row meets
every query. On the CPU backend, in cache with a heap a query (exec/order/knn_batch.py); on
a GPU, by bounds and candidates (exec/order/knn_gpu_batch.py: the tensor cores' 1-bit MMA for
16 queries or more). With PENSTOCK_KNN_GPU_BATCH=0 a GPU runs one top-k statement a query
(plan/top_k.py). The answer says which ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from penstock.errors import QueryError
from penstock.frontend.table_functions import KnnCall
from penstock.exec.order import knn_gpu_batch as gpu_batch
from penstock.exec.order.knn_batch import KnnBatchSearch, check_k, query_matrix
from penstock.exec.order.knn_gpu_replay import search_cached
from penstock.exec.steady.runs import graphs_enabled
from penstock.io.column_cache import table_key
from penstock.plan.types import Kind

if TYPE_CHECKING:
    from penstock.connection.interface import Connection


@dataclass
class KnnResult:
    table: pa.Table  # query, id, distance, rank
    engine: str  # what ran it, e.g. "penstock-cpu (one pass over 2,000,000 rows)"


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def knn_hamming(db: "Connection", table: str, column: str, queries: Any, k: int = 10, id: str = "id",
                where: str | None = None) -> KnnResult:
    matrix = query_matrix(queries)
    check_k(k)  # before either path
    filter_sql = f" WHERE {where}" if where else ""
    if db.backend.name == "cpu" or gpu_batch.ENABLED:
        return one_pass(db, table, column, matrix, k, id, where)
    sql = (f"SELECT {quote(id)} AS id, hamming_distance({quote(column)}, $1) AS distance FROM {quote(table)}"
           f"{filter_sql} ORDER BY 2, 1 LIMIT {k}")
    parts = []
    for q, signature in enumerate(matrix):
        found = db.sql(sql, [signature.tobytes()]).to_arrow()
        n = found.num_rows
        parts.append(pa.table({"query": pa.array(np.full(n, q, np.int32)),
                               "id": found.column("id").cast(pa.int64()),
                               "distance": found.column("distance").cast(pa.int32()),
                               "rank": pa.array(np.arange(1, n + 1, dtype=np.int32))}))
    return KnnResult(pa.concat_tables(parts), f"penstock-{db.backend.name} (one top-k statement a query)")


def one_pass(db: "Connection", table: str, column: str, matrix: np.ndarray, k: int, id: str = "id",
             where: str | None = None) -> KnnResult:
    """The batch in one pass over the table, on the connection's device (`penstock bench knn`
    calls it on a GPU beside the default)."""
    filter_sql = f" WHERE {where}" if where else ""
    cached = None if where else _cached(db, table, [id, column])
    graph_note = ""
    if cached is not None and db.backend.supports_graphs and graphs_enabled():
        (ids, signatures), rows = cached
        answer, detail = search_cached(db.executor, (table, column, id), [ids, signatures], rows, matrix, k)
        if answer is not None:  # one CUDA graph (exec/order/knn_gpu_replay.py)
            return KnnResult(answer, _engine(db, rows, "cached columns", len(matrix), f"; {detail}"))
        graph_note = f"; {detail}" if detail else ""
    job: KnnBatchSearch | gpu_batch.GpuKnnBatchSearch
    if db.backend.name == "cpu":
        job = KnnBatchSearch(db.backend, matrix, k)
    else:
        job = gpu_batch.GpuKnnBatchSearch(db.backend, matrix, k)
    if cached is not None:  # the cache's arrays as they are: no scan, no copy
        (ids, signatures), rows = cached
        job.add_arrays(ids.values[:rows], signatures.values, signatures.validity, place=True)
        how = "cached columns"
    else:
        sql = f"SELECT {quote(id)}, {quote(column)} FROM {quote(table)}{filter_sql}"
        how = "a scan"
        if not _scan_on_device(db, sql, job):  # the rows as Arrow on the host, batch by batch
            for batch in db.stream(sql):
                job.add(batch.column(0), batch.column(1))
            how = "a scan through the host"
    if isinstance(job, KnnBatchSearch):
        detail = f"; slices on {job.numa_nodes} NUMA nodes" if job.numa_nodes > 1 else ""
    else:
        detail = f"; {job.described}{graph_note}"
    return KnnResult(job.result(), _engine(db, job.rows_read, how, len(matrix), detail))


def _engine(db: "Connection", rows: int, how: str, queries: int, detail: str) -> str:
    """What ran a one-pass search, e.g. 'penstock-gpu (one pass over 20,000 rows of cached
    columns for 1 query; popcounts, lanes sharing a row; one CUDA graph, replayed)'."""
    return (f"penstock-{db.backend.name} (one pass over {rows:,} rows of {how} "
            f"for {queries} quer{'y' if queries == 1 else 'ies'}{detail})")


def _scan_on_device(db: "Connection", sql: str, job: Any) -> bool:
    """Feed the search each batch of `sql`'s result as the executor writes it, in the
    device's memory: the table's file goes to the device once, never through host Arrow
    (which cost 8.6 s for 5 GB of signatures on an H200, against 0.15 s for the statement).
    False, having run nothing, when the plan does not stream its result or the columns are
    not what the search takes as they are (the caller then streams Arrow, which says why)."""
    from penstock.exec.buffers import unpack_bits
    from penstock.exec.metrics import QueryMetrics
    from penstock.exec.result_stream import streams

    prepared = db.prepare(sql)
    compiled = prepared.compiled
    if compiled is None or not streams(compiled.plan):
        return False
    plan = compiled.plan
    id_at, sig_at = plan.result_columns[0], plan.result_columns[1]
    types = plan.buffer_types[plan.result_buffer]
    if not (types[id_at].is_integer and types[sig_at].kind is Kind.BINARY and types[sig_at].width == job.width):
        return False

    def take(batch: Any) -> None:
        n = batch.length
        ids, signatures = batch.columns[id_at], batch.columns[sig_at]
        if ids.validity is not None and not bool(unpack_bits(db.backend, ids.validity, n).all()):
            raise QueryError("knn_hamming: the id column has NULLs", "22004")
        job.add_arrays(ids.values[:n], signatures.values[:n * job.width], signatures.validity)

    db.executor.run(compiled, QueryMetrics(), emit=take)
    return True


def _cached(db: "Connection", table: str, names: list[str]) -> tuple[list[Any], int] | None:
    """The columns from the connection's column cache when it holds every one (a bytea
    column is its bytes end to end there, as in Arrow)."""
    from penstock.frontend.session import fold_identifier

    cache = db.executor.column_cache
    reader = db.tables.get(fold_identifier(table))
    if cache is None or reader is None:
        return None
    found = cache.get(table_key(reader), names)
    if found is None:
        return None
    columns, rows = found
    ids, signatures = columns
    if not (ids.type.is_integer and signatures.type.kind is Kind.BINARY) or ids.validity is not None:
        return None
    return columns, rows


def answer_call(db: "Connection", call: KnnCall) -> str:
    """A knn_hamming(...) call in FROM (frontend/table_functions.py): the batch searched, its
    rows registered as a table of the connection (query_id, id, distance, rank), its name
    returned. An unchanged answer keeps its registration, so plans made with it stay."""
    found = db.sql(f"SELECT {quote(call.queries_id)}, {quote(call.queries_column)} FROM {quote(call.queries)}")
    queries = found.to_arrow()
    queries = queries.filter(pc.is_valid(queries.column(1)))  # a NULL signature has no neighbours
    query_ids = queries.column(0).combine_chunks()
    if not pa.types.is_integer(query_ids.type) or query_ids.null_count:
        raise QueryError(f'knn_hamming: the queries\' id column "{call.queries_id}" must be integers without NULLs',
                         "22004")
    if queries.num_rows == 0:
        answer = pa.table({"query": pa.array([], pa.int32()), "id": pa.array([], pa.int64()),
                           "distance": pa.array([], pa.int32()), "rank": pa.array([], pa.int32())})
        engine = "no search (no query signature)"
    else:
        searched = knn_hamming(db, call.table, call.column, queries.column(1), call.k, call.id, call.where or None)
        answer, engine = searched.table, searched.engine
    positions = answer.column("query").to_numpy()
    rows = pa.table({"query_id": query_ids.cast(pa.int64()).take(pa.array(positions)),
                     "id": answer.column("id"), "distance": answer.column("distance"), "rank": answer.column("rank")})
    name = call.relation
    db.table_answers[name] = engine
    db.table_sources[name] = (call.table, call.queries)
    held = db.tables.get(name)
    if held is None or not getattr(held, "table", rows).equals(rows):
        db.register_arrow(name, rows)
    return name
