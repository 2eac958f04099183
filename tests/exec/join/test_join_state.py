"""JoinState's limits (exec/join/join_state.py): probes keep a slot's position in 32 bits, so a
hash join refuses a build side over 2^31 rows with a clear error before allocating."""

from __future__ import annotations

import pytest

from penstock.device.registry import get_backend
from penstock.errors import QueryError
from penstock.exec.join.join_state import JoinState
from penstock.io.device_batch import Batch


def test_a_build_side_over_two_to_the_31_rows_is_refused() -> None:
    with pytest.raises(QueryError) as e:
        JoinState(get_backend("cpu"), Batch([], 2**31 + 1), keyed=True, label="hash join #3")
    assert e.value.sqlstate == "54000"
    assert "hash join #3" in str(e.value) and "2,147,483,649 build rows" in str(e.value)


def test_a_build_side_of_two_to_the_31_rows_is_not() -> None:
    """The largest table a 2^31-row build needs has 2^32 slots: the guard lets it through
    (the memory cap stops it before anything is allocated)."""
    with pytest.raises(QueryError) as e:
        JoinState(get_backend("cpu"), Batch([], 2**31), keyed=True, label="hash join #3", memory_limit=2**20)
    assert e.value.sqlstate == "53200"
