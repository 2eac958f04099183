"""What penstock reads off DataFusion's logical plan, which its Substrait form does not carry:
set operations DataFusion would answer wrong, and which anti joins are null-aware (NOT IN)."""

from __future__ import annotations

import re
from typing import Any

from penstock.errors import FEATURE_NOT_SUPPORTED, QueryError


def refuse_multiset_set_operations(sql: str, logical: Any) -> None:
    """INTERSECT ALL and EXCEPT ALL: DataFusion plans them as a semi (anti) join, which
    keeps every matching left row (drops every matched one) where SQL keeps min(m, n)
    (max(m - n, 0)) copies of a row. No engine here computes them right, so they raise
    instead of giving a wrong answer. Before optimisation a semi or anti join without a
    Distinct below it comes only from these two (subqueries are still Filters then)."""
    def visit(node: Any) -> None:
        line = node.display()
        if line.startswith(("LeftSemi Join", "LeftAnti Join")):
            left = node.inputs()[0]
            if not left.display().startswith("Distinct"):
                word = "INTERSECT ALL" if line.startswith("LeftSemi") else "EXCEPT ALL"
                at = re.search(word.replace(" ", r"\s+"), sql, re.I)
                raise QueryError(f"{word} is not supported (use {word.split()[0]}, which removes duplicates)",
                                 FEATURE_NOT_SUPPORTED, at.start() + 1 if at else None)
        for child in node.inputs():
            visit(child)

    visit(logical)


def null_aware_flags(logical: Any) -> list[bool]:
    """For each join of the plan, in pre-order: is it a null-aware anti join (NOT IN)?"""
    out: list[bool] = []

    def visit(node: Any) -> None:
        line = node.display()
        if " Join:" in line or line.startswith("Join:") or line.startswith("Cross Join"):
            out.append("null_aware" in line)
        for child in node.inputs():
            visit(child)

    visit(logical)
    return out
