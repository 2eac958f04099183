"""frontend/rewrites/frame_exclusion.py: EXCLUDE NO OTHERS dropped, the other exclusions refused with
0A000 at their position, and the word left alone outside a frame."""

from __future__ import annotations

import pyarrow as pa
import pytest

import penstock
from penstock.errors import QueryError
from penstock.frontend.rewrites.frame_exclusion import frame_exclusions

FRAME = "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW {}) FROM t"


def test_no_others_is_the_default_and_is_dropped() -> None:
    assert frame_exclusions(FRAME.format("EXCLUDE NO OTHERS")) == FRAME.format("")
    assert frame_exclusions(FRAME.format("exclude   no\n others")) == FRAME.format("")


@pytest.mark.parametrize("clause", ["EXCLUDE CURRENT ROW", "EXCLUDE GROUP", "exclude ties"])
def test_the_other_exclusions_are_refused_where_they_stand(clause: str) -> None:
    sql = FRAME.format(clause)
    with pytest.raises(QueryError) as e:
        frame_exclusions(sql)
    assert e.value.sqlstate == "0A000"
    assert e.value.position == sql.index(clause) + 1
    assert clause.upper().split(" ", 1)[1] in str(e.value)


def test_exclude_outside_a_frame_is_left_alone() -> None:
    for sql in ("SELECT exclude FROM t", "SELECT 'EXCLUDE TIES' AS x", "SELECT x AS exclude FROM t"):
        assert frame_exclusions(sql) == sql


def test_through_a_connection() -> None:
    db = penstock.connect(device="cpu")
    db.register_arrow("t", pa.table({"x": pa.array([1, 2, 2, 3], pa.int64())}))
    got = db.sql(FRAME.format("EXCLUDE NO OTHERS") + " ORDER BY 1").to_arrow().column(0).to_pylist()
    assert got == [1, 3, 5, 8]
    with pytest.raises(QueryError) as e:
        db.sql(FRAME.format("EXCLUDE TIES"))
    assert e.value.sqlstate == "0A000"
