"""Selectivity guesses that order a star join's probes (plan/probe_order.py)."""

from __future__ import annotations

import pytest

from penstock.plan.expr import Call, ColumnRef, InList, Literal
from penstock.plan.probe_order import selectivity
from penstock.plan.types import INT32, BOOL

YEAR = ColumnRef(INT32, 1)
CITY = ColumnRef(INT32, 2)


def call(fn: str, *args: object) -> Call:
    return Call(BOOL, fn, tuple(args))  # type: ignore[arg-type]


def test_a_range_on_one_value_is_not_two_independent_bounds() -> None:
    years = call("and", call("ge", YEAR, Literal(INT32, 1992)), call("le", YEAR, Literal(INT32, 1997)))
    cities = call("or", call("eq", CITY, Literal(INT32, 1)), call("eq", CITY, Literal(INT32, 5)))
    # SSB Q3.3: the city filter (2 of 250 cities) must be probed before the years (6 of 7)
    assert selectivity(cities) < selectivity(years)
    assert selectivity(years) == pytest.approx(0.25)


def test_bounds_on_different_values_multiply() -> None:
    two = call("and", call("ge", YEAR, Literal(INT32, 1992)), call("le", CITY, Literal(INT32, 9)))
    assert selectivity(two) == pytest.approx(0.3 * 0.3)


def test_a_constant_on_the_left_bounds_the_other_side() -> None:
    years = call("and", call("le", Literal(INT32, 1992), YEAR), call("gt", Literal(INT32, 1997), YEAR))
    assert selectivity(years) == pytest.approx(0.25)


def test_in_lists_grow_with_their_items() -> None:
    assert selectivity(InList(BOOL, CITY, (Literal(INT32, 1),))) < selectivity(
        InList(BOOL, CITY, (Literal(INT32, 1), Literal(INT32, 2), Literal(INT32, 3))))
