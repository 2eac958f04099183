"""The build side of one hash join: its rows in one batch and the hash table over them."""

from __future__ import annotations

from typing import Any

import numpy as np

from penstock.codegen.fixed_kernels import fill_direct_map
from penstock.codegen.kernel import JoinTablePart, Kernel
from penstock.device.base import Backend
from penstock.errors import PROGRAM_LIMIT_EXCEEDED, QueryError
from penstock.exec.aggregate.aggregate_state import TABLE_SHARE, next_pow2
from penstock.exec.errors import TableTooLarge, kernel_error
from penstock.exec.kernels import compile_kernel
from penstock.exec.pipeline.materialize_state import DirectFill
from penstock.io.device_batch import Batch, numpy_dtype
from penstock.plan.physical import BuildHashTable, PhysicalPlan


_INT_CTYPES = {np.dtype(np.int8): "int8_t", np.dtype(np.int16): "int16_t", np.dtype(np.int32): "int32_t",
               np.dtype(np.int64): "int64_t", np.dtype(np.uint8): "uint8_t", np.dtype(np.uint16): "uint16_t",
               np.dtype(np.uint32): "uint32_t", np.dtype(np.uint64): "uint64_t"}


MAX_DIRECT_ROWS = 2**31 - 1  # a direct map holds row + 1 in an int32


class JoinState:
    def __init__(self, backend: Backend, batch: Batch, keyed: bool, label: str = "hash join",
                 memory_limit: int | None = None, filled: DirectFill | None = None,
                 partition: tuple[int, int] = (0, 0), table_rows: int | None = None):
        """The join over `batch`; with `filled`, a direct map its build pipeline filled
        without failure, which is then all the join needs (no hash table is built).
        `partition` (mask, index): the table holds only the rows whose key hash falls in it
        (exec/join/partitioned_join.py), sized for `table_rows` of them (counted: it cannot fill)."""
        self.backend = backend
        self.partition = partition
        self.batch = batch
        self.rows = batch.length
        self.keyed = keyed
        self._matched: Any = None
        self.has_null = False
        self.multiplicity = self.rows if not keyed else 0  # a keyless join visits every row
        self.key_bounds: tuple[int, int] | None = None  # (min, max) when the build kernel recorded them
        self.direct: Any = None  # direct map key -> row, when the build key allows one
        self.direct_min = 0
        self.direct_range = 0
        if filled is not None:
            self.capacity, self.slots, self.status = 1, None, None
            self.multiplicity = 1
            self.key_bounds = (filled.lo, filled.lo + filled.span - 1)
            self.direct, self.direct_min, self.direct_range = filled.direct, filled.lo, filled.span
            return
        # a join without keys visits every build row (a nested loop): no table to fill
        wanted = 0 if not keyed else self.rows if table_rows is None else table_rows
        self.capacity = max(next_pow2(2 * wanted), 16)
        # probes keep a slot's position in 32 bits, and the chain a build row + 1 (hash_table.h)
        if self.capacity > 2 ** 32 or self.rows >= 2 ** 32 - 1:
            raise QueryError(f"{label} has {self.rows:,} build rows; a hash join holds at most 2^31",
                             PROGRAM_LIMIT_EXCEEDED)
        need = 16 * self.capacity
        # and the chain, a 32-bit word per row of the batch (a partition's rows lie anywhere in
        # it): like the matched flags, sized by the build rows already held, not by the table,
        # so it is left out of the share a partition's table must fit; none in a table that
        # only counts a partition's rows
        chain_words = (self.rows + 1) // 2 if keyed and table_rows != 0 else 0
        if memory_limit is not None and need > memory_limit // TABLE_SHARE:  # checked before allocating it
            raise TableTooLarge(f"{label} needs a hash table of {size_text(need)} for {self.rows:,} rows, "
                                f"more than its share of memory_limit ({size_text(memory_limit)}) allows", need)
        try:
            self.slots = backend.zeros(2 * self.capacity + chain_words, np.uint64)
        except backend.out_of_memory as e:
            raise TableTooLarge(f"{label} needs a hash table of {size_text(need)} for {self.rows:,} rows, "
                                f"more than the device has free", need) from e
        # [error | has-NULL flag | most rows with one key | key min | key max]: read back once
        start = np.array([0, 0, 0, np.iinfo(np.int64).max, np.iinfo(np.int64).min], dtype=np.int64)
        self.status = backend.to_device_queued(start).view(np.uint64)  # read by the build launched next
        self.err = self.status[0:1].view(np.int32)
        self.has_null_flag = self.status[1:2].view(np.int32)
        self.most = self.status[2:3].view(np.int64)
        self.key_range = self.status[3:5].view(np.int64)

    @property
    def matched(self) -> Any:
        """Per build row, whether a probe matched it (FULL joins); made when first asked for."""
        if self._matched is None:
            self._matched = self.backend.zeros(max(self.rows, 1), np.uint8)
        return self._matched

    def restore_matched(self, flags: Any) -> None:
        """Flags an earlier probe left (a grace join's partition, read again for the rows
        nothing matched)."""
        self._matched = flags

    def build(self, kernel: Kernel, label: str) -> None:
        from penstock.exec.pipeline.binder import BindContext, bind

        compiled = compile_kernel(self.backend, kernel)
        for mode in (0, 1):  # insert, then measure (a failed insert is reported after both)
            ctx = BindContext(rows=self.rows, err=self.err, mode=mode, batch=self.batch,
                              joins={_join_of(kernel): self})
            self.backend.launch(compiled, self.rows, bind(kernel, ctx))
        words = self.backend.to_host(self.status)
        code = int(words[0]) & 0xFFFFFFFF
        if code:
            raise kernel_error(code, label)
        self.has_null = bool(int(words[1]) & 0xFFFFFFFF)
        self.multiplicity = int(words[2])
        lo, hi = (int(w) for w in words[3:5].view(np.int64))
        if any(p.role == JoinTablePart(_join_of(kernel), "key_range") for p in kernel.params) and lo <= hi:
            self.key_bounds = (lo, hi)

    def count_rows(self, kernel: Kernel) -> int:
        """Rows with a non-NULL key in this join's partition (the build kernel's mode 2)."""
        from penstock.exec.pipeline.binder import BindContext, bind

        compiled = compile_kernel(self.backend, kernel)
        ctx = BindContext(rows=self.rows, err=self.err, mode=2, batch=self.batch, joins={_join_of(kernel): self})
        self.backend.launch(compiled, self.rows, bind(kernel, ctx))
        return int(self.backend.to_host(self.status)[2])

    def make_direct(self, key_column: int) -> None:
        """A direct map for a unique, dense, NULL-free integer key (most star-schema
        dimensions): probes then read one array element instead of probing the table."""
        col = self.batch.columns[key_column]
        if self.key_bounds is None or self.has_null or self.multiplicity > 1 or self.rows >= MAX_DIRECT_ROWS:
            return
        lo, hi = self.key_bounds
        span = hi - lo + 1
        if span > max(8 * self.rows, 1 << 20) or span > 1 << 28:
            return
        direct = direct_map(self.backend, span)
        ctype = _INT_CTYPES.get(np.dtype(col.values.dtype))
        if ctype is None:
            return
        if self.rows:  # a fixed kernel: CuPy's fancy-index scatter would import cupyx and compile on first use
            kernel = compile_kernel(self.backend, fill_direct_map(ctype))
            self.backend.launch(kernel, self.rows, [self.rows, col.values, lo, span, direct])
        self.direct, self.direct_min, self.direct_range = direct, lo, span

    def part(self, part: str, as_pointer: bool) -> Any:
        if part == "slots":
            return self.slots
        if part == "mask":
            return self.capacity - 1
        if part == "rows":
            return self.rows
        if part == "has_null":
            return self.has_null_flag if as_pointer else int(self.has_null)
        if part == "multiplicity":
            return self.most
        if part == "key_range":
            return self.key_range
        if part == "matched":
            return self.matched
        if part == "direct":
            return self.direct
        if part == "direct_min":
            return self.direct_min
        if part == "direct_range":
            return self.direct_range
        if part == "part_mask":
            return self.partition[0]
        if part == "part_index":
            return self.partition[1]
        raise KeyError(part)

    @property
    def fanout(self) -> int:
        """The most rows one probe row can produce from this join."""
        return max(self.multiplicity, 1)


def _join_of(kernel: Kernel) -> int:
    return next(p.role.join for p in kernel.params if isinstance(p.role, JoinTablePart))


def direct_map(backend: Backend, span: int) -> Any:
    """A zeroed direct map over `span` keys: row + 1 per key (0: none), then a bitmap of the
    keys present (kernels/hash_table.h)."""
    return backend.zeros(span + (span + 31) // 32, np.int32)


def direct_map_kernels(plan: PhysicalPlan) -> list[Kernel]:
    """The direct-map fills the plan's single-key joins may need, to compile with the rest."""
    ctypes = set()
    for step in plan.steps:
        if isinstance(step, BuildHashTable) and len(step.key_columns) == 1:
            try:
                ctype = _INT_CTYPES.get(np.dtype(numpy_dtype(step.types[step.key_columns[0]])))
            except KeyError:  # text keys have no direct map
                continue
            if ctype is not None:
                ctypes.add(ctype)
    return [fill_direct_map(c) for c in sorted(ctypes)]


def size_text(n: int) -> str:
    """Bytes as errors say them: MiB, or bytes under one (a budget of a few KiB said 0 MiB)."""
    return f"{n / 2**20:,.0f} MiB" if n >= 1 << 20 else f"{n:,} bytes"
