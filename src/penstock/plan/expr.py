"""Expression trees of penstock's IR: small frozen classes, one per kind of node.

Frozen dataclasses compare and hash by structure, which the code generator uses to compute
a common subexpression once. A node keeps its hash once computed (remember_hash): the
generator looks up every subexpression it visits, and hashing a tree anew at each of its
nodes made a fifth of a plan's kernel-source generation (TPC-H, profiled). Literal values are stored in their physical representation
(decimals as scaled integers, dates as days, timestamps as integer units) so that they can
be passed to kernels as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from penstock.plan.types import BOOL, DataType

if TYPE_CHECKING:
    from penstock.plan.rel import Rel


PARAM_SLOT_BASE = 1 << 20  # runtime slots of a call's parameters; scalar subqueries number theirs from 0


@dataclass(frozen=True)
class Expr:
    type: DataType

    def __getstate__(self) -> dict[str, Any]:
        """A pickled or copied node leaves its remembered hash behind (string hashes differ
        between processes)."""
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    def children(self) -> tuple["Expr", ...]:
        return ()

    def with_children(self, children: tuple["Expr", ...]) -> "Expr":
        return self


@dataclass(frozen=True)
class ColumnRef(Expr):
    """The index-th column of the relation the expression is evaluated over."""

    index: int = 0

    def __str__(self) -> str:
        return f"#{self.index}"


@dataclass(frozen=True)
class Literal(Expr):
    value: Any = None

    def __str__(self) -> str:
        if isinstance(self.value, bytes):  # bytea, as PostgreSQL writes it
            return "'\\x" + self.value.hex() + "'"
        return "NULL" if self.value is None else repr(self.value)


@dataclass(frozen=True)
class Call(Expr):
    """A scalar function by penstock's canonical name (see plan/functions.py)."""

    fn: str = ""
    args: tuple[Expr, ...] = ()

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return Call(self.type, self.fn, children)

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Cast(Expr):
    arg: Expr = None  # type: ignore[assignment]

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return Cast(self.type, children[0])

    def __str__(self) -> str:
        return f"CAST({self.arg} AS {self.type})"


@dataclass(frozen=True)
class Case(Expr):
    """Searched CASE; branches are evaluated lazily, in order, like PostgreSQL."""

    whens: tuple[tuple[Expr, Expr], ...] = ()
    otherwise: Expr | None = None

    def children(self) -> tuple[Expr, ...]:
        flat = tuple(e for pair in self.whens for e in pair)
        return flat + ((self.otherwise,) if self.otherwise is not None else ())

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        n = len(self.whens)
        whens = tuple((children[2 * i], children[2 * i + 1]) for i in range(n))
        otherwise = children[2 * n] if self.otherwise is not None else None
        return Case(self.type, whens, otherwise)

    def __str__(self) -> str:
        parts = " ".join(f"WHEN {c} THEN {v}" for c, v in self.whens)
        tail = f" ELSE {self.otherwise}" if self.otherwise is not None else ""
        return f"CASE {parts}{tail} END"


@dataclass(frozen=True)
class InList(Expr):
    """arg IN (items): NULL when no item matches and arg or an item is NULL."""

    arg: Expr = None  # type: ignore[assignment]
    items: tuple[Expr, ...] = ()
    negated: bool = False

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,) + self.items

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return InList(self.type, children[0], children[1:], self.negated)

    def __str__(self) -> str:
        op = "NOT IN" if self.negated else "IN"
        return f"{self.arg} {op} ({', '.join(map(str, self.items))})"


@dataclass(frozen=True)
class Like(Expr):
    """arg [NOT] [I]LIKE pattern [ESCAPE e]; the pattern is matched at run time."""

    arg: Expr = None  # type: ignore[assignment]
    pattern: Expr = None  # type: ignore[assignment]
    escape: str | None = None
    case_insensitive: bool = False
    negated: bool = False

    def children(self) -> tuple[Expr, ...]:
        return (self.arg, self.pattern)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return Like(self.type, children[0], children[1], self.escape, self.case_insensitive,
                    self.negated)

    def __str__(self) -> str:
        op = ("NOT " if self.negated else "") + ("ILIKE" if self.case_insensitive else "LIKE")
        return f"{self.arg} {op} {self.pattern}"


@dataclass(frozen=True)
class ScalarSubquery(Expr):
    """A subquery yielding at most one value; the executor runs it before its user."""

    rel: "Rel" = field(default=None, compare=False, hash=False)  # type: ignore[assignment]
    key: int = 0  # identity, since relations do not hash by structure

    def __str__(self) -> str:
        return f"(subquery {self.key})"


@dataclass(frozen=True)
class BuildColumn(Expr):
    """A column of the build side of the probe-th join in a pipeline (physical plans only).

    Reads the build row that the probe matched; NULL when the probe is an outer join's
    unmatched row.
    """

    probe: int = 0
    index: int = 0

    def __str__(self) -> str:
        return f"build{self.probe}.#{self.index}"


@dataclass(frozen=True)
class RowOrdinal(Expr):
    """The row's position in its table's scan (int64, never NULL): what the result of a
    plain scan is sorted by, so that it comes back in file order (the planner adds it)."""

    def __str__(self) -> str:
        return "row_ordinal"


@dataclass(frozen=True)
class Param(Expr):
    """A value known only when the query runs: a scalar subquery's result, or a bytea
    parameter of the call (slots from PARAM_SLOT_BASE; frontend/param_slots.py)."""

    slot: int = 0

    def __str__(self) -> str:
        return f"${self.slot - PARAM_SLOT_BASE + 1}" if self.slot >= PARAM_SLOT_BASE else f"${self.slot}"


def walk(e: Expr) -> Iterator[Expr]:
    """Every node of the tree, parents before children."""
    yield e
    for c in e.children():
        yield from walk(c)


def transform(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild `e` bottom-up; `fn` returns a replacement for a node, or None to keep it."""
    kids = e.children()
    if kids:
        new_kids = tuple(transform(k, fn) for k in kids)
        if new_kids != kids:
            e = e.with_children(new_kids)
    replaced = fn(e)
    return e if replaced is None else replaced


def substitute_columns(e: Expr, columns: list[Expr]) -> Expr:
    """Replace ColumnRef(i) by columns[i]: inlines a projection into its consumer."""
    return transform(e, lambda n: columns[n.index] if isinstance(n, ColumnRef) else None)


def referenced_columns(e: Expr) -> set[int]:
    return {n.index for n in walk(e) if isinstance(n, ColumnRef)}


def conjuncts(e: Expr) -> list[Expr]:
    """Split a tree of ANDs into its terms, left to right."""
    if isinstance(e, Call) and e.fn == "and":
        return [t for a in e.args for t in conjuncts(a)]
    return [e]


def and_all(terms: list[Expr]) -> Expr | None:
    if not terms:
        return None
    out = terms[0]
    for t in terms[1:]:
        out = Call(BOOL, "and", (out, t))
    return out


def remember_hash(cls: type) -> None:
    """Make `cls`'s dataclass-generated hash computed once per node (nodes are frozen)."""
    generated = cls.__hash__

    def __hash__(self: Expr) -> int:
        found = self.__dict__.get("_hash")
        if found is None:
            found = generated(self)  # type: ignore[misc]
            object.__setattr__(self, "_hash", found)
        return found

    cls.__hash__ = __hash__  # type: ignore[method-assign, assignment]


def _node_classes(root: type) -> list[type]:
    return [root] + [c for sub in root.__subclasses__() for c in _node_classes(sub)]


for _node_class in _node_classes(Expr):
    remember_hash(_node_class)
