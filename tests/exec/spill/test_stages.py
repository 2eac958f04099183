"""The pipeline of stage threads (exec/spill/stages.py): order kept with several workers in
a stage, the first error raised to the caller, a cancel from `check` stopping every stage."""

from __future__ import annotations

import random
import threading
import time

import pytest

from penstock.exec.spill.stages import StageTimes, run_stages


def slow_square(x: int) -> int:
    time.sleep(random.random() / 500)  # workers finish out of order
    return x * x


@pytest.mark.parametrize("workers", [1, 3])
def test_items_keep_their_order(workers: int) -> None:
    out: list[int] = []
    times = StageTimes()
    run_stages(range(200), [("square", slow_square), ("plus one", lambda x: x + 1)], out.append, depth=1,
               times=times, workers={"square": workers})
    assert out == [x * x + 1 for x in range(200)]
    assert {"read", "square", "plus one", "write"} <= set(times.busy)


def test_the_first_error_is_raised_and_every_thread_ends() -> None:
    def fail_at_50(x: int) -> int:
        if x == 50:
            raise ValueError("item 50")
        return x

    before = threading.active_count()
    with pytest.raises(ValueError, match="item 50"):
        run_stages(range(1000), [("fail", fail_at_50)], lambda _x: None, workers={"fail": 2})
    time.sleep(0.05)
    assert threading.active_count() <= before


def test_a_cancel_from_check_stops_the_pipeline() -> None:
    seen: list[int] = []

    def check() -> None:
        if len(seen) == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stages(iter(range(10**9)), [("same", lambda x: x)], seen.append, check=check, workers={"same": 2})
    assert len(seen) == 10
