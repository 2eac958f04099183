"""Bytea parameters bound when a query runs, not when it is planned.

A similarity search runs one statement with a new signature each time:
`SELECT id, hamming_distance(sig, $1) AS d FROM t ORDER BY d LIMIT 10`. Planned with each
signature as a constant, every search would plan and translate anew (milliseconds, against
a scan of a few). So a bytea parameter of MIN_BYTES or more is planned as a marker constant
of its length (the bytes of a digest of its position, which no user constant is likely to
equal): the translator turns the marker into a runtime value (plan.expr.Param, slot
SLOT_BASE + its position), the plan is kept under the parameters' shape (their lengths, not
their bytes), and each run binds the call's own bytes to the slots. Other parameters stay
constants of the plan, as before.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

from penstock.plan.expr import PARAM_SLOT_BASE as SLOT_BASE

MIN_BYTES = 8  # shorter values stay constants: a marker that short could meet a user's constant

Params = Sequence[Any] | dict[str, Any] | None


@dataclass
class SlottedParams:
    planning: Params  # the values DataFusion plans with (markers in place of bytea values)
    markers: dict[bytes, int] = field(default_factory=dict)  # marker -> runtime slot


def _items(params: Params) -> list[tuple[Any, Any]]:
    if params is None:
        return []
    return list(params.items()) if isinstance(params, dict) else list(enumerate(params))


def _slotted(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview)) and len(bytes(value)) >= MIN_BYTES


def marker(position: int, length: int) -> bytes:
    seed = hashlib.blake2b(f"penstock parameter {position}".encode(), digest_size=32).digest()
    return (seed * (length // len(seed) + 1))[:length]


def slot_params(params: Params) -> SlottedParams:
    """The values to plan with, and which markers stand for which slots."""
    if params is None:
        return SlottedParams(None)
    markers: dict[bytes, int] = {}
    planning: list[tuple[Any, Any]] = []
    for position, (key, value) in enumerate(_items(params)):
        if _slotted(value):
            mark = marker(position, len(bytes(value)))
            markers[mark] = SLOT_BASE + position
            value = mark
        planning.append((key, value))
    values: Params = dict(planning) if isinstance(params, dict) else [v for _, v in planning]
    return SlottedParams(values, markers)


def runtime_values(params: Params) -> dict[int, tuple[Any, bool]]:
    """The call's bytea values by slot, as the executor binds them ((value, is NULL))."""
    return {SLOT_BASE + position: (bytes(value), False)
            for position, (_, value) in enumerate(_items(params)) if _slotted(value)}


def shape(params: Params) -> str:
    """The parameters as the plan cache tells plans apart: a slotted value by its length."""
    return repr([(key, ("bytea", len(bytes(value))) if _slotted(value) else value)
                 for key, value in _items(params)])
