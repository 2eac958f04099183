"""One test per corpus entry: penstock (strict, on the device fixture) against DuckDB."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from . import oracle


def load_corpus() -> list[oracle.Q]:
    """Every QUERIES list of the queries_*.py modules next to this file, in file order."""
    corpus: list[oracle.Q] = []
    for path in sorted(Path(__file__).parent.glob("queries_*.py")):
        module = importlib.import_module(f"{__package__}.{path.stem}")
        corpus.extend(module.QUERIES)
    return corpus


CORPUS = load_corpus()


def test_corpus_is_wellformed() -> None:
    """Unique ids, deterministic LIMITs, and the size the suite promises."""
    assert oracle.check_wellformed(CORPUS) == []
    assert len(CORPUS) >= 200


@pytest.mark.parametrize("q", CORPUS, ids=[q.id for q in CORPUS])
def test_query(q: oracle.Q, penstock_db: Any, duck: Any, expected_engine: str) -> None:
    oracle.check_query(penstock_db, duck, q, expected_engine)


@pytest.mark.parametrize("q", CORPUS, ids=[q.id for q in CORPUS])
def test_query_on_the_fallback_engine(q: oracle.Q, fallback_db: Any, duck: Any) -> None:
    """Whatever engine runs a query, the answer is PostgreSQL's: each entry also as
    DataFusion would answer it, were penstock to hand it over."""
    oracle.check_on_fallback(fallback_db, duck, q)


# ---------------------------------------------------------------- the harness itself
# These need neither penstock nor DuckDB: they pin down what the oracle calls equal.

def _t(**cols: Any) -> Any:
    import pyarrow as pa

    return pa.table(cols)


def test_oracle_numbers_compare_by_value() -> None:
    import decimal

    import pyarrow as pa

    a = _t(x=pa.array([1, None, 3], pa.int64()), y=pa.array([0.1 + 0.2, 2.0, None]))
    e = _t(x=pa.array([decimal.Decimal("3.00"), decimal.Decimal("1.00"), None], pa.decimal128(5, 2)),
           y=pa.array([None, 0.3, 2.0]))
    assert oracle.compare_tables(a, e, ordered=False) is None  # int == Decimal, float within tolerance
    assert oracle.compare_tables(a, e, ordered=True) is not None
    e_bad = _t(x=pa.array([decimal.Decimal("3.01"), decimal.Decimal("1.00"), None], pa.decimal128(5, 2)),
               y=pa.array([None, 0.3, 2.0]))
    assert oracle.compare_tables(a, e_bad, ordered=False) is not None  # exact numbers: no tolerance


def test_oracle_float_tolerance_and_decimal_scale() -> None:
    import decimal

    import pyarrow as pa

    assert oracle.compare_tables(_t(v=pa.array([1e6])), _t(v=pa.array([1e6 * (1 + 1e-7)])), False) is not None
    assert oracle.compare_tables(_t(v=pa.array([1e6])), _t(v=pa.array([1e6 * (1 + 1e-12)])), False) is None
    avg = _t(v=pa.array([decimal.Decimal("0.333333")], pa.decimal128(16, 6)))
    assert oracle.compare_tables(avg, _t(v=pa.array([1 / 3])), False) is None


def test_oracle_order_and_multiset() -> None:
    import pyarrow as pa

    a, e = _t(v=pa.array([2, 1, None])), _t(v=pa.array([None, 1, 2]))
    assert oracle.compare_tables(a, e, ordered=False) is None
    diff = oracle.compare_tables(a, e, ordered=True)
    assert diff is not None and "only the order differs" in diff
    assert oracle.compare_tables(_t(v=pa.array([1, 1])), _t(v=pa.array([1])), False) is not None


def test_oracle_strings_and_instants() -> None:
    import datetime as dt

    import pyarrow as pa

    assert oracle.compare_tables(_t(s=pa.array(["a", ""], pa.string_view())),
                                 _t(s=pa.array(["", "a"], pa.large_string())), False) is None
    assert oracle.compare_tables(_t(s=pa.array([""])), _t(s=pa.array([None], pa.string())), False) is not None
    day = _t(d=pa.array([dt.date(1969, 12, 31)], pa.date32()))
    assert oracle.compare_tables(day, _t(d=pa.array([dt.datetime(1969, 12, 31)], pa.timestamp("us"))), False) is None
    assert oracle.compare_tables(day, _t(d=pa.array([dt.datetime(1969, 12, 31, 0, 0, 1)], pa.timestamp("ns"))),
                                 False) is not None


def test_oracle_top_level_order_by() -> None:
    assert oracle.has_top_level("SELECT a FROM t ORDER BY a", "ORDER BY")
    assert not oracle.has_top_level("SELECT sum(a) FROM (SELECT a FROM t ORDER BY a LIMIT 3) s", "ORDER BY")
    assert not oracle.has_top_level("SELECT 'x ORDER BY y' FROM t", "ORDER BY")
    assert oracle.has_top_level("SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY 1", "ORDER BY")
