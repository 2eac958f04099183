"""The oracle's comparison (tests/differential/oracle.py): what it calls equal and unequal."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa

from .oracle import compare_tables


def test_a_decimal_quotient_matches_a_float_within_its_scale_in_any_row_order() -> None:
    """DuckDB's double quotient 7.6e-24 against penstock's decimal(30, 8) 0: equal at the scale;
    the rows used to sort apart, and the multisets compared unequal."""
    actual = pa.table({"q": pa.array([Decimal("0E-8"), Decimal("0E-8")], pa.decimal128(30, 8)),
                       "d": pa.array([Decimal("-88.7562"), Decimal("-0.0606")], pa.decimal128(18, 4))})
    expected = pa.table({"q": pa.array([-6.981197365224977e-28, 7.565927022638263e-24]),
                         "d": pa.array([Decimal("-0.0606"), Decimal("-88.7562")], pa.decimal128(18, 4))})
    assert compare_tables(actual, expected, ordered=False) is None
    wrong = expected.set_column(0, "q", pa.array([-6.981197365224977e-28, 2e-8]))
    assert compare_tables(actual, wrong, ordered=False) is not None  # past the scale: a difference


def test_near_equal_rows_on_two_sides_of_a_rounding_step_still_match() -> None:
    actual = pa.table({"q": pa.array([Decimal("1.2E-7"), Decimal("1.1E-7")], pa.decimal128(30, 8))})
    expected = pa.table({"q": pa.array([1.2076190210629858e-07, 1.1777569962954026e-07])})
    assert compare_tables(actual, expected, ordered=False) is None
    assert compare_tables(actual, expected.set_column(0, "q", pa.array([1.2076e-07, 1.4e-07])), ordered=False)
