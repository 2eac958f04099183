"""What the parts of a Connection use of it (penstock/api.py's Connection has all of it).

A search or a stream is handed the Connection it serves; typed by this Protocol they need not
import penstock.api, which imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol, Sequence

import pyarrow as pa

if TYPE_CHECKING:
    from penstock.connection.prepared import Prepared
    from penstock.device.base import Backend
    from penstock.exec.executor import Executor
    from penstock.exec.spill.off_device import SpillLimits
    from penstock.io import TableReader

Params = Sequence[Any] | dict[str, Any] | None


class Connection(Protocol):
    backend: Backend
    executor: Executor
    tables: dict[str, TableReader]
    table_answers: dict[str, str]  # a table function's registered answer -> what made it
    table_sources: dict[str, tuple[str, ...]]  # ... -> the tables its search read

    def prepare(self, sql: str, params: Params = None) -> Prepared: ...

    def sql(self, sql: str, params: Params = None, check: Callable[[], None] | None = None,
            memory_limit: int | None = None, spill: SpillLimits | None = None) -> Any: ...  # api.Result

    def stream(self, sql: str, params: Params = None, check: Callable[[], None] | None = None,
               memory_limit: int | None = None, spill: SpillLimits | None = None) -> Iterable[pa.Table]: ...

    def fallback_pieces(self, prepared: Prepared, check: Callable[[], None] | None = None,
                        params: Params = None) -> tuple[pa.Schema, Iterator[pa.Table]]: ...

    def register_arrow(self, name: str, table: pa.Table) -> None: ...
