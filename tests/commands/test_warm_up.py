"""penstock/commands/warm_up.py, which `penstock prebuild` runs on a GPU: every query runs on penstock's
own engine (strict: none falls back to DataFusion), with and without a small budget, and the
device is left without a budget."""

from __future__ import annotations

import pytest

from penstock.commands import warm_up


def test_the_warm_up_queries_run_on_penstock_and_leave_no_budget(device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import penstock

    engines: list[str] = []
    real_sql = penstock.Connection.sql

    def noting(self: penstock.Connection, sql: str, *args: object, **kwargs: object) -> penstock.Result:
        result = real_sql(self, sql, *args, **kwargs)  # type: ignore[arg-type]
        engines.append(result.engine)
        return result

    monkeypatch.setattr(penstock.Connection, "sql", noting)
    assert warm_up.warm_up(device) > 0
    assert engines == [f"penstock-{device}"] * (2 * len(warm_up.QUERIES))
    assert penstock.connect(device=device).backend.memory_limit is None
