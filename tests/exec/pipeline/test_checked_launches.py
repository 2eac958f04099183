"""A pipeline that probes a join runs its batch as launches of at most
Backend.checked_launch_matches join matches where launches run to their end before
returning (the CPU's), and the query's check is called between them: a join fanning out holds a launch for seconds, and a cancel or a
server's shutdown must not wait for the whole batch (exec/pipeline/runner.py)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pytest

import penstock
from penstock.device.registry import get_backend


class Stopped(Exception):
    pass


def test_a_probing_batch_is_cancelled_between_its_launches(monkeypatch: pytest.MonkeyPatch,
                                                           pipeline_launches: Callable[[Any], list[int]]) -> None:
    be = get_backend("cpu")
    monkeypatch.setattr(type(be), "checked_launch_matches", 204_800)
    launched = pipeline_launches(be)
    db = penstock.connect(device="cpu")
    n = 10_000
    db.register_arrow("probe", pa.table({"k": np.arange(n) % 50, "v": np.arange(n)}))
    db.register_arrow("build", pa.table({"k": np.arange(5_000) % 50, "w": np.arange(5_000)}))
    sql = "SELECT count(*) AS n, sum(v + w) AS s FROM probe JOIN build ON probe.k = build.k"
    expected = db.sql(sql).to_arrow().to_pylist()
    assert expected[0]["n"] == n * 100
    probing = launched[1:]  # after the build side's own pipeline
    assert max(probing) == 2048 and len(probing) == 5, launched  # 100 matches a row: 2,048-row launches

    def check() -> None:
        if len(launched) >= 2:  # once the probe has launched: a cancel arrives
            raise Stopped()

    launched.clear()
    with pytest.raises(Stopped):
        db.sql(sql, check=check)
    assert len(launched) == 2, launched  # the build's pipeline, the probe's first launch, and no more
