"""Rows of an intermediate result moved off the device: host memory first, then spill files.

An operator whose output outgrows its share of device memory (a partitioned aggregation's
groups, exec/aggregate/partitioned_aggregate.py) hands each finished part here as an Arrow table. It
stays in host memory while the query's host budget (`host_memory_limit`) allows; past it,
the part is written to an Arrow IPC file in the query's private spill directory
(spill/directory.py) and read back, memory-mapped, when a later step consumes the buffer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from penstock.exec.spill.directory import SpillDirectory


@dataclass(frozen=True)
class SpillLimits:
    """One query's own host budget and spill directory (a server session's SET
    penstock.host_memory_limit and penstock.spill_dir), over the connection's: the tighter
    budget binds; the directory replaces the connection's."""
    host_memory_limit: int | None = None
    spill_dir: str | None = None

    def over(self, host_memory_limit: int | None, spill_dir: str | os.PathLike[str] | None,
             ) -> tuple[int | None, str | os.PathLike[str] | None]:
        """(host budget, spill directory) of a query on a connection with these."""
        budgets = [b for b in (self.host_memory_limit, host_memory_limit) if b is not None]
        return (min(budgets) if budgets else None), (self.spill_dir or spill_dir)


@dataclass
class OffDevice:
    """One buffer's parts held off the device, in the order they were added."""

    parts: list[pa.Table | Path] = field(default_factory=list)
    host_bytes: int = 0
    disk_bytes: int = 0  # the Arrow bytes of the parts in spill files
    rows: int = 0

    def tables(self) -> Iterator[pa.Table]:
        for part in self.parts:
            if isinstance(part, Path):  # mapped, not read: the table's buffers keep the map open
                yield ipc.open_file(pa.memory_map(str(part))).read_all()
            else:
                yield part


class OffDeviceStore:
    """Every buffer's off-device parts for one query run, and its spill directory (made on
    the first file, removed by close())."""

    def __init__(self, host_memory_limit: int | None = None, spill_dir: str | os.PathLike[str] | None = None):
        self.host_memory_limit = host_memory_limit
        self.spill_dir = spill_dir
        self.buffers: dict[int, OffDevice] = {}
        self.directory: SpillDirectory | None = None
        self.files = 0

    def holds(self, buffer: int) -> bool:
        return bool(self.buffers.get(buffer) and self.buffers[buffer].parts)

    def host_bytes(self) -> int:
        return sum(b.host_bytes for b in self.buffers.values())

    def add(self, buffer: int, table: pa.Table) -> str:
        """Keep `table` as the buffer's next part; returns the tier it went to ('host' or
        'disk')."""
        held = self.buffers.setdefault(buffer, OffDevice())
        size = table.nbytes
        held.rows += table.num_rows
        if self.host_memory_limit is None or self.host_bytes() + size <= self.host_memory_limit:
            held.parts.append(table)
            held.host_bytes += size
            return "host"
        held.parts.append(self.write(table))
        held.disk_bytes += size
        return "disk"

    def write(self, table: pa.Table) -> Path:
        if self.directory is None:
            self.directory = SpillDirectory(self.spill_dir).__enter__()
        path = self.directory.file(f"part-{self.files}.arrow")
        self.files += 1
        try:
            with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
        except OSError as e:
            raise self.directory.full(e) from e
        self.directory.bytes_written += table.nbytes
        return path

    def held(self, buffer: int) -> OffDevice:
        return self.buffers.get(buffer) or OffDevice()

    def tables(self, buffer: int) -> Iterator[pa.Table]:
        held = self.buffers.get(buffer)
        if held is not None:
            yield from held.tables()

    def merge(self, into: int, other: int) -> None:
        """Make `other`'s parts the last of `into`'s (nothing is copied)."""
        moved = self.buffers.pop(other, None)
        if moved is None:
            return
        held = self.buffers.setdefault(into, OffDevice())
        held.parts += moved.parts
        held.host_bytes += moved.host_bytes
        held.disk_bytes += moved.disk_bytes
        held.rows += moved.rows

    def drop(self, buffer: int) -> None:
        """Forget one buffer's parts; its spill files are removed at once."""
        held = self.buffers.pop(buffer, None)
        for part in held.parts if held is not None else []:
            if isinstance(part, Path):
                part.unlink(missing_ok=True)

    def close(self) -> None:
        self.buffers.clear()
        if self.directory is not None:
            self.directory.__exit__(None, None, None)
            self.directory = None
