"""Running a session's query: planned on a worker (so a cancel answers at once), admitted
against the memory it may use, executed, its result handed back whole or as a stream.

All sessions share one penstock Connection, so there is one memory budget and the
device-resident column cache serves everyone. The executing device's memory is admitted:
- on a GPU, the GPU's budget (less the shared column cache) is cut into `slots` shares
  (server/admission.py); when all are taken a query waits, or with its session's
  `penstock.gpu_admission = cpu` (or past `penstock.gpu_wait`) runs on a second Connection
  on the CPU backend, under the host's admission;
- on the CPU backend (and for that second Connection), the host's cap -- `--memory-limit`
  there, else the backend's default budget, half the machine's memory -- is admitted the
  same way: three quarters in `slots` shares for penstock's kernels, waited for; the last
  quarter is the memory pool of DataFusion's engine (the queries the kernels cannot run),
  which spills past it. So the queries running at once never ask for more than the cap.
A query whose share is too small runs again alone, holding every slot.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from penstock.api import Connection, Result
from penstock.connection.plain_types import plain_types
from penstock.connection.streaming import ResultStream, finished
from penstock.connection.watched import cancellable
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.exec.result_stream import streams
from penstock.exec.spill.off_device import SpillLimits
from penstock.server.admission import Admission, Grant
from penstock.server.rewrites.rewrite import rewrite

KERNELS_SHARE = 3  # quarters of a host cap for the kernels' queries; the rest is DataFusion's pool


@dataclass
class Executed:
    result: Result | ResultStream
    notices: list[str]
    grant: Grant | None = None


def host_shares(cap: int) -> tuple[int, int]:
    """(the kernels' admitted memory, DataFusion's pool) of a host memory cap."""
    kernels = cap * KERNELS_SHARE // 4
    return kernels, cap - kernels


class QueryRunner:
    def __init__(self, conn: Connection, cpu: Connection | None, admission: Admission,
                 host_admission: Admission | None, memo: Callable[[tuple[object, ...], Callable[[], str]], str]):
        self.conn = conn
        self.cpu = cpu  # the CPU backend beside a GPU (None: conn is on the CPU)
        self.admission = admission  # the executing device's memory
        self.host_admission = host_admission  # host memory for `cpu`'s queries (beside a GPU)
        self.memo = memo

    def plan(self, sql: str, params: dict[str, bytes] | None, check: Callable[[], None]) -> tuple[str, Any]:
        """The statement as the planner reads it, and its plan: made on a worker thread, so
        a cancel or the statement's timeout answers the client while a slow plan is made
        (penstock/connection/watched.py); the plan cache keeps it for the run that follows."""
        def work() -> tuple[str, Any]:
            text = self.memo(("planner", sql), lambda: planner_sql(sql))
            return text, self.conn.prepare(text, params)
        return cancellable(work, check)

    def execute(self, sql: str, check: Callable[[], None], policy: str = "wait",
                max_wait: float | None = None, cancelled: threading.Event | None = None,
                session_limit: int | None = None, params: dict[str, bytes] | None = None,
                spill: SpillLimits | None = None) -> Executed:
        """Run a query under admission. Catalog queries and queries for DataFusion take no
        slot (DataFusion's pool bounds them). `session_limit`: the session's own cap (SET
        penstock.memory_limit), below the rest; `spill`: its host budget and spill
        directory. `params`: bytea parameters bound when the query runs."""
        sql, prepared = self.plan(sql, params, check)
        if prepared.compiled is None:
            return Executed(self.conn.sql(sql, params, check=check, memory_limit=session_limit, spill=spill), [])
        grant = self._acquire(policy, max_wait, cancelled)
        check()  # a cancel while waiting for a slot
        if not grant.on_gpu:
            return self._on_cpu(sql, params, check, session_limit, spill, grant, cancelled, stream=False)
        limit = lower(grant.memory_limit, session_limit)
        try:
            try:
                return Executed(self.conn.sql(sql, params, check=check, memory_limit=limit, spill=spill), [], grant)
            except QueryError as e:
                session_bound = session_limit is not None and limit == session_limit
                if e.sqlstate != OUT_OF_MEMORY or grant.slots == self.admission.slots or session_bound:
                    raise  # alone, the session's own cap would bind all the same
        finally:
            self.admission.release(grant)
        alone = self.admission.acquire("wait", None, alone=True, cancelled=cancelled)
        try:
            check()
            result = self.conn.sql(sql, params, check=check, memory_limit=lower(alone.memory_limit, session_limit),
                                   spill=spill)
            return Executed(result, ["the query's share of memory was too small: it ran again alone"], alone)
        finally:
            self.admission.release(alone)

    def stream(self, sql: str, check: Callable[[], None], policy: str = "wait",
               max_wait: float | None = None, cancelled: threading.Event | None = None,
               session_limit: int | None = None, params: dict[str, bytes] | None = None,
               spill: SpillLimits | None = None) -> Executed:
        """A query whose result goes to the client as it is made (penstock/connection/streaming.py),
        under the same admission as `execute`; the slot is held until the stream ends.
        (A plan that cannot stream runs through `execute`, with its retry alone.)"""
        sql, prepared = self.plan(sql, params, check)
        if prepared.compiled is None:
            return Executed(self.conn.stream(sql, params, check=check, memory_limit=session_limit, spill=spill), [])
        if not streams(prepared.compiled.plan):
            executed = self.execute(sql, check, policy, max_wait, cancelled, session_limit, params, spill)
            return Executed(finished(executed.result), executed.notices, executed.grant)
        grant = self._acquire(policy, max_wait, cancelled)
        check()
        if not grant.on_gpu:
            return self._on_cpu(sql, params, check, session_limit, spill, grant, cancelled, stream=True)
        return self._stream_under(self.admission, grant, self.conn, sql, params, check, session_limit, spill, [])

    def _acquire(self, policy: str, max_wait: float | None, cancelled: threading.Event | None) -> Grant:
        if self.cpu is None:  # nowhere else to run: wait for the memory
            policy, max_wait = "wait", None
        return self.admission.acquire(policy, max_wait, cancelled=cancelled)

    def _on_cpu(self, sql: str, params: dict[str, bytes] | None, check: Callable[[], None], session_limit: int | None,
                spill: SpillLimits | None, busy: Grant, cancelled: threading.Event | None, stream: bool) -> Executed:
        """The GPU's slots were busy: the CPU backend runs it, under the host's admission."""
        assert self.cpu is not None and self.host_admission is not None
        notices = [self.busy_note(busy)]
        grant = self.host_admission.acquire("wait", None, cancelled=cancelled)
        check()
        if stream:
            return self._stream_under(self.host_admission, grant, self.cpu, sql, params, check, session_limit,
                                      spill, notices)
        try:
            result = self.cpu.sql(sql, params, check=check, memory_limit=lower(grant.memory_limit, session_limit),
                                  spill=spill)
            return Executed(result, notices, grant)
        finally:
            self.host_admission.release(grant)

    @staticmethod
    def _stream_under(admission: Admission, grant: Grant, conn: Connection, sql: str, params: dict[str, bytes] | None,
                      check: Callable[[], None], session_limit: int | None, spill: SpillLimits | None,
                      notices: list[str]) -> Executed:
        try:
            stream = conn.stream(sql, params, check=check, memory_limit=lower(grant.memory_limit, session_limit),
                                 spill=spill)
        except BaseException:
            admission.release(grant)
            raise
        stream.finalizers.append(lambda: admission.release(grant))
        return Executed(stream, notices, grant)

    def busy_note(self, grant: Grant) -> str:
        """The NOTICE for a query that ran on the CPU backend because the GPU slots were busy."""
        waited = f" for {grant.waited:.1f} s" if grant.waited >= 0.05 else ""
        return f"all {self.admission.slots} GPU query slots were busy{waited}: ran on the CPU backend"

    def result_schema(self, sql: str) -> pa.Schema:
        """The result columns of a query, from its plan (nothing runs)."""
        planned = self.conn.prepare(self.memo(("planner", sql), lambda: planner_sql(sql))).planned
        return plain_types(pa.Table.from_arrays([pa.array([], f.type) for f in planned.schema], names=planned.names)).schema

    def explain(self, sql: str, analyze: bool, check: Callable[[], None] = lambda: None) -> str:
        text, _ = self.plan(sql, None, check)
        return self.conn.explain(text, analyze=analyze)


def planner_sql(sql: str) -> str:
    """The statement as DataFusion should read it: PostgreSQL-only syntax rewritten (the
    frontend then types constants as PostgreSQL types them, bytea constants included)."""
    return rewrite(sql)


def lower(limit: int | None, other: int | None) -> int | None:
    """The tighter of two memory caps (None: no cap)."""
    if limit is None:
        return other
    return limit if other is None else min(limit, other)


def describe_engine(result: Result | ResultStream) -> str:
    why = f" (fallback: {result.fallback_reason})" if result.fallback_reason else ""
    return f"{result.engine}{why}"
