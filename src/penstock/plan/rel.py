"""Relation trees of penstock's IR (the logical plan after DataFusion optimised it).

Each node knows its output fields. Expressions inside a node refer to its input's columns
by position (ColumnRef); a join's residual condition refers to left columns followed by
right columns.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import Enum

import pyarrow as pa

from penstock.plan import types as T
from penstock.plan.expr import Expr
from penstock.plan.types import DataType


@dataclass(frozen=True)
class Field:
    name: str
    type: DataType
    nullable: bool = True  # False only where the source promises no NULLs (NOT NULL columns)


class JoinKind(Enum):
    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    FULL = "full"
    SEMI = "semi"  # rows of the left side that have a match
    ANTI = "anti"  # rows of the left side that have none


@dataclass(eq=False)
class Rel:
    @property
    def fields(self) -> list[Field]:
        raise NotImplementedError

    def inputs(self) -> list["Rel"]:
        return []


@dataclass(eq=False)
class Scan(Rel):
    """Columns `columns` (positions in the table's schema) of a registered table."""

    table: str
    columns: list[int]
    table_fields: list[Field]

    @property
    def fields(self) -> list[Field]:
        return [self.table_fields[i] for i in self.columns]


@dataclass(eq=False)
class Values(Rel):
    """Literal rows (SELECT without FROM, VALUES lists)."""

    table: pa.Table
    value_fields: list[Field]

    @property
    def fields(self) -> list[Field]:
        return self.value_fields

    def __deepcopy__(self, memo: dict[int, object]) -> "Values":
        """A copy sharing the table (Arrow tables do not change): a deep copy of a table of
        no columns loses its row count, and `SELECT count(DISTINCT a), sum(DISTINCT b)`
        over one constant row, planned as one aggregation per argument over copies of
        the input, summed no row (distinct_aggregates.split_by_argument)."""
        return Values(self.table, copy.deepcopy(self.value_fields, memo))


@dataclass(eq=False)
class Filter(Rel):
    input: Rel
    condition: Expr

    @property
    def fields(self) -> list[Field]:
        return self.input.fields

    def inputs(self) -> list[Rel]:
        return [self.input]


@dataclass(eq=False)
class Project(Rel):
    input: Rel
    exprs: list[Expr]
    names: list[str]

    @property
    def fields(self) -> list[Field]:
        return [Field(n, e.type) for n, e in zip(self.names, self.exprs)]

    def inputs(self) -> list[Rel]:
        return [self.input]


@dataclass(eq=False)
class Join(Rel):
    """Equi-join on left_keys[i] = right_keys[i], then `residual` over left+right columns.

    `null_aware` marks the anti join of NOT IN: a NULL anywhere on the right, or a NULL
    left key, means no row of the left qualifies (unless the right side is empty).
    """

    left: Rel
    right: Rel
    kind: JoinKind
    left_keys: list[Expr]
    right_keys: list[Expr]
    residual: Expr | None = None
    null_aware: bool = False

    @property
    def fields(self) -> list[Field]:
        if self.kind in (JoinKind.SEMI, JoinKind.ANTI):
            return self.left.fields
        return self.left.fields + self.right.fields

    def inputs(self) -> list[Rel]:
        return [self.left, self.right]


AGG_FUNCTIONS = ("count", "count_star", "sum", "min", "max", "avg", "bool_and", "bool_or")


@dataclass(frozen=True)
class AggCall:
    fn: str  # one of AGG_FUNCTIONS
    arg: Expr | None
    type: DataType
    distinct: bool = False

    def __str__(self) -> str:
        inner = "*" if self.arg is None else ("DISTINCT " if self.distinct else "") + str(self.arg)
        return f"{self.fn}({inner})"


@dataclass(eq=False)
class Aggregate(Rel):
    """Output: the group expressions, then the measures."""

    input: Rel
    groups: list[Expr]
    measures: list[AggCall]
    names: list[str] = field(default_factory=list)

    @property
    def fields(self) -> list[Field]:
        types = [g.type for g in self.groups] + [m.type for m in self.measures]
        names = self.names or [f"c{i}" for i in range(len(types))]
        return [Field(n, t) for n, t in zip(names, types)]

    def inputs(self) -> list[Rel]:
        return [self.input]


@dataclass(frozen=True)
class SortKey:
    expr: Expr
    ascending: bool = True
    nulls_first: bool = False


@dataclass(eq=False)
class Sort(Rel):
    input: Rel
    keys: list[SortKey]

    @property
    def fields(self) -> list[Field]:
        return self.input.fields

    def inputs(self) -> list[Rel]:
        return [self.input]


@dataclass(eq=False)
class Limit(Rel):
    input: Rel
    offset: int
    count: int | None

    @property
    def fields(self) -> list[Field]:
        return self.input.fields

    def inputs(self) -> list[Rel]:
        return [self.input]


@dataclass(eq=False)
class UnionAll(Rel):
    branches: list[Rel]

    @property
    def fields(self) -> list[Field]:
        """The first branch's fields, except where the branches' values need a type that
        holds them all (T.supertype: a sum(bigint), numeric in penstock, beside a bigint; a
        date + interval, a timestamp in penstock, beside a date)."""
        first = self.branches[0].fields
        out = []
        for j, f in enumerate(first):
            wider = T.supertype([b.fields[j].type for b in self.branches])
            out.append(Field(f.name, wider) if wider is not None and wider != f.type else f)
        return out

    def inputs(self) -> list[Rel]:
        return list(self.branches)


def explain_rel(rel: Rel, indent: int = 0) -> str:
    """A plain indented rendering of an IR tree, for debugging and EXPLAIN VERBOSE."""
    pad = "  " * indent
    name = type(rel).__name__
    if isinstance(rel, Scan):
        head = f"{name} {rel.table} [{', '.join(f.name for f in rel.fields)}]"
    elif isinstance(rel, Filter):
        head = f"{name} {rel.condition}"
    elif isinstance(rel, Project):
        head = f"{name} {', '.join(map(str, rel.exprs))}"
    elif isinstance(rel, Join):
        keys = ", ".join(f"{a} = {b}" for a, b in zip(rel.left_keys, rel.right_keys))
        extra = f" residual {rel.residual}" if rel.residual is not None else ""
        na = " null-aware" if rel.null_aware else ""
        head = f"{name} {rel.kind.value}{na} on [{keys}]{extra}"
    elif isinstance(rel, Aggregate):
        head = f"{name} groups [{', '.join(map(str, rel.groups))}] " \
               f"measures [{', '.join(map(str, rel.measures))}]"
    elif isinstance(rel, Sort):
        head = f"{name} " + ", ".join(
            f"{k.expr} {'ASC' if k.ascending else 'DESC'} NULLS {'FIRST' if k.nulls_first else 'LAST'}"
            for k in rel.keys)
    elif isinstance(rel, Limit):
        head = f"{name} offset {rel.offset} count {rel.count}"
    else:
        head = name
    lines = [pad + head]
    for child in rel.inputs():
        lines.append(explain_rel(child, indent + 1))
    return "\n".join(lines)

