"""Kernel error codes (kernels/xpu.h) as QueryErrors with PostgreSQL's SQLSTATEs."""

from __future__ import annotations

from penstock.errors import OUT_OF_MEMORY, QueryError

ERR_TABLE_FULL = 4  # a hash table ran out of room: grow it (or, with trusted sizes, run again)
KERNEL_ERRORS = {
    1: ("22003", "value out of range: overflow"),
    2: ("22012", "division by zero"),
    3: ("22P02", "invalid input syntax"),
    4: ("XX000", "internal error: a hash table ran out of room"),
    5: ("22011", "negative substring length not allowed"),
    6: ("22008", "date/time field value out of range"),
    7: ("21000", "more than one row returned by a subquery used as an expression"),
    8: ("XX000", "internal error: a kernel's row queue overflowed"),
    9: ("22026", "binary values of different lengths"),
    10: ("22023", "invalid hexadecimal data: decode(text, 'hex') needs an even number of hex digits"),
    11: ("22007", "invalid input syntax for type date or timestamp: penstock reads text values in ISO 8601 "
                  "(1999-01-08, with BC), 19990108 and 1/8/1999 (MDY) forms; PostgreSQL's other forms "
                  "('January 8, 1999') are read in constants only"),
}


def kernel_error(code: int, where: str) -> QueryError:
    sqlstate, message = KERNEL_ERRORS.get(code, ("XX000", f"kernel error {code}"))
    return QueryError(f"{message} (in {where})", sqlstate)


class RunAgain(Exception):
    """What an earlier run taught a plan (a direct map's key range, an aggregation's sizes)
    no longer holds for this run's data: the executor forgets it and runs the plan again."""

    def __init__(self, joins: list[int] | None = None, pipelines: list[int] | None = None):
        super().__init__(f"run again without the ranges of joins {joins} and sizes of pipelines {pipelines}")
        self.joins = joins or []
        self.pipelines = pipelines or []


class TableTooLarge(QueryError):
    """A hash table (an aggregation's, with its text arenas, or a join's) would not fit its
    share of the memory budget. A grouped aggregation or a keyed join catches it and runs
    partitioned by the keys' hashes (exec/aggregate/partitioned_aggregate.py, exec/join/partitioned_join.py);
    anywhere else it is the 53200 it carries."""

    def __init__(self, message: str, needed_bytes: int):
        super().__init__(message, OUT_OF_MEMORY)
        self.needed_bytes = needed_bytes
        self.progress: float | None = None  # share of the input rows the pass had run when it stopped
        self.groups: int | None = None  # groups its table held then (one: partitioning cannot help)
        self.slot_bytes: int | None = None  # bytes of one of its table's slots
        self.estimated_groups = 0  # groups its first windows predicted for the whole input (0: none)
        self.foreseen = False  # raised on that prediction, before the table filled (AggregateState.foresee)


class DeviceOutOfMemory(QueryError):
    """An allocation the device (or the memory cap) refused during a step: 53200, naming
    the step. Unlike a table too large for any budget, a smaller budget may help: the
    executor runs the plan again planning with half of it (exec/memory/smaller_budgets.py)."""

    def __init__(self, message: str, step: str):
        super().__init__(message, OUT_OF_MEMORY)
        self.step = step
