"""SET penstock.host_memory_limit and penstock.spill_dir (server/settings.py, server/database.py,
exec/spill/off_device.SpillLimits): a session's own host budget, under the server's, and its
own spill directory, where its queries' private spill directories go instead of the server's.
Bad values are 22023, naming the setting, and the session goes on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.errors import QueryError
from penstock.exec.spill.off_device import SpillLimits
from penstock.server.database import Database, ServerConfig
from penstock.server.settings import Settings
from server.conftest import Running

MiB = 1 << 20
ROWS = 150_000
GROUPED = "SELECT k, sum(v) AS s, count(*) AS n FROM f GROUP BY k"


def write_facts(path: Path) -> pa.Table:
    rng = np.random.default_rng(3)
    table = pa.table({"k": pa.array(rng.integers(0, ROWS // 2, ROWS)), "v": pa.array(rng.integers(-99, 99, ROWS))})
    pq.write_table(table, path, row_group_size=25_000)
    return table


def expected(table: pa.Table) -> list[tuple[int, int, int]]:
    grouped = table.group_by("k").aggregate([("v", "sum"), ("v", "count")])
    return sorted(zip(grouped.column("k").to_pylist(), grouped.column("v_sum").to_pylist(),
                      grouped.column("v_count").to_pylist()))


def test_the_tighter_host_budget_binds_and_the_session_directory_replaces_the_servers() -> None:
    assert SpillLimits().over(8, "/srv") == (8, "/srv")
    assert SpillLimits(4, "/fast").over(8, "/srv") == (4, "/fast")
    assert SpillLimits(16, None).over(8, "/srv") == (8, "/srv")
    assert SpillLimits(16, None).over(None, None) == (16, None)


@pytest.mark.parametrize("name, value, problem", [
    ("penstock.host_memory_limit", "lots", "a size such as 512MB"),
    ("penstock.spill_dir", "relative/dir", "not an absolute path"),
    ("penstock.spill_dir", "/no/such/penstock/dir", "no such directory"),
])
def test_a_bad_value_is_22023_and_names_the_setting(name: str, value: str, problem: str) -> None:
    settings = Settings({})
    with pytest.raises(QueryError) as e:
        settings.set(name, value)
    assert e.value.sqlstate == "22023" and name in e.value.message and problem in e.value.message
    assert settings.spill() is None  # unchanged: the server's


def test_the_sessions_queries_spill_into_its_directory_under_its_budget(tmp_path: Path) -> None:
    data, server_dir, session_dir = tmp_path / "data", tmp_path / "server-spill", tmp_path / "session-spill"
    for d in (data, server_dir, session_dir):
        d.mkdir()
    table = write_facts(tmp_path / "f.parquet")
    db = Database(ServerConfig(data_dir=str(data), device="cpu", spill_dir=str(server_dir)))
    db.conn.register("f", str(tmp_path / "f.parquet"))
    seen: dict[str, int] = {"session": 0, "server": 0}

    def watch() -> None:  # called between batches and steps: where the spill files are now
        seen["session"] = max(seen["session"], len(list(session_dir.rglob("*.arrow"))))
        seen["server"] = max(seen["server"], len(list(server_dir.rglob("*.arrow"))))

    settings = Settings({})
    settings.set("penstock.host_memory_limit", "64kB")
    settings.set("penstock.spill_dir", str(session_dir))
    result = db.queries.execute(GROUPED, watch, session_limit=2 * MiB, spill=settings.spill()).result
    assert sorted(tuple(r.values()) for r in result.to_arrow().to_pylist()) == expected(table)
    assert seen["session"] > 0 and seen["server"] == 0, seen
    assert not list(session_dir.rglob("*.arrow"))  # removed once the query ended
    seen.update(session=0, server=0)  # without the settings: the server's directory
    db.queries.execute(GROUPED, watch, session_limit=2 * MiB, spill=SpillLimits(64 << 10)).result.to_arrow()
    assert seen["server"] > 0 and seen["session"] == 0, seen


def test_set_over_the_wire(pg_server: Running, tmp_path: Path) -> None:
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        before = conn.execute("SELECT count(*) FROM sample").fetchall()
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("SET penstock.spill_dir = 'nowhere'")
        conn.execute(f"SET penstock.spill_dir = '{tmp_path}'")
        conn.execute("SET penstock.host_memory_limit = '256MB'")
        assert conn.execute("SHOW penstock.spill_dir").fetchall() == [(str(tmp_path),)]
        assert conn.execute("SHOW penstock.host_memory_limit").fetchall() == [("256MB",)]
        assert conn.execute("SELECT count(*) FROM sample").fetchall() == before
        conn.execute("RESET penstock.spill_dir")
        assert conn.execute("SHOW penstock.spill_dir").fetchall() == [("",)]
