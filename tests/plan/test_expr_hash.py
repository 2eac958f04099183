"""Expression nodes keep their hash once computed (plan/expr.py remember_hash): equal trees
still hash and compare equal, and a pickled or copied node computes its hash again."""

from __future__ import annotations

import copy
import pickle

from penstock.plan.expr import Call, ColumnRef, Literal
from penstock.plan.types import BOOL, INT64


def tree(value: int) -> Call:
    return Call(BOOL, "gt", (Call(INT64, "add", (ColumnRef(INT64, 0), Literal(INT64, value))), Literal(INT64, 3)))


def test_equal_trees_hash_alike_and_different_ones_do_not_collide_in_a_dict() -> None:
    a, b, c = tree(1), tree(1), tree(2)
    seen = {a: "a"}
    assert hash(a) == hash(a) == hash(b) and seen[b] == "a" and c not in seen
    assert a.__dict__["_hash"] == hash(a)  # remembered after the first hash


def test_a_pickled_or_copied_node_does_not_carry_its_remembered_hash() -> None:
    a = tree(1)
    hash(a)
    for again in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a), copy.copy(a)):
        assert "_hash" not in again.__dict__ and again == a and hash(again) == hash(a)
