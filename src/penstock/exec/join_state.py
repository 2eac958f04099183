"""The build side of one hash join: its rows in one batch and the hash table over them."""

from __future__ import annotations

from typing import Any

import numpy as np

from penstock.codegen.kernel import Kernel
from penstock.device.base import Backend
from penstock.errors import OUT_OF_MEMORY, QueryError
from penstock.exec.aggregate_state import next_pow2
from penstock.exec.errors import kernel_error
from penstock.exec.kernels import compile_kernel
from penstock.io.device_batch import Batch


class JoinState:
    def __init__(self, backend: Backend, batch: Batch, keyed: bool):
        self.backend = backend
        self.batch = batch
        self.rows = batch.length
        self.keyed = keyed
        self.capacity = max(next_pow2(2 * self.rows), 16)
        self.slots = backend.zeros(2 * self.capacity, np.uint64)
        # [error | has-NULL flag | most rows with one key]: one array, read back once
        self.status = backend.zeros(3, np.uint64)
        self.err = self.status[0:1].view(np.int32)
        self.has_null_flag = self.status[1:2].view(np.int32)
        self.most = self.status[2:3].view(np.int64)
        self.matched = backend.zeros(max(self.rows, 1), np.uint8)
        self.has_null = False
        self.multiplicity = self.rows if not keyed else 0  # a keyless join visits every row

    def build(self, kernel: Kernel, label: str, memory_limit: int | None) -> None:
        from penstock.exec.binder import BindContext, bind

        if memory_limit is not None and self.slots.nbytes > memory_limit:
            raise QueryError(f"{label} needs a hash table of {self.slots.nbytes / 2**20:.0f} MiB, "
                             f"more than the memory limit allows", OUT_OF_MEMORY)
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
        if part == "matched":
            return self.matched
        raise KeyError(part)

    @property
    def fanout(self) -> int:
        """The most rows one probe row can produce from this join."""
        return max(self.multiplicity, 1)


def _join_of(kernel: Kernel) -> int:
    from penstock.codegen.kernel import JoinTablePart

    return next(p.role.join for p in kernel.params if isinstance(p.role, JoinTablePart))
