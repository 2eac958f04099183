"""SET penstock.memory_limit (server/settings.py, server/database.py): a session's own cap on
its queries' working memory, below the server's --memory-limit and GPU admission share. A
query that cannot fit under it (one group's DISTINCT set over every row beside avg, which
keeps it one aggregation: partitioning by the group key cannot split the set) fails with
53200 and the session goes on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.errors import QueryError
from penstock.server.database import Database, ServerConfig
from penstock.server.query_runner import lower
from penstock.server.settings import Settings, memory_bytes
from server.conftest import Running

GROUPS = 400_000  # a DISTINCT set of 400,000 values in one group: well over 8 MiB
QUERY = "SELECT v, count(DISTINCT u) AS n, avg(u) AS a FROM u GROUP BY v"
ANSWER = (1, GROUPS, (GROUPS - 1) / 2)


def write_groups(path: Path) -> Path:
    keys = np.arange(GROUPS, dtype=np.int64)
    pq.write_table(pa.table({"u": pa.array(keys), "v": pa.array(np.ones(GROUPS, dtype=np.int64))}), path)
    return path


@pytest.mark.parametrize("text, size", [("512MB", 512 << 20), ("2 GB", 2 << 30), ("1.5GiB", 3 << 29),
                                        ("4096", 4 << 20), ("64kB", 64 << 10), ("", None), ("0", None)])
def test_memory_sizes_read_as_postgresql_reads_them(text: str, size: int | None) -> None:
    assert memory_bytes(text, "penstock.memory_limit") == size


@pytest.mark.parametrize("text", ["lots", "5 parsecs", "-1MB", "1e9"])
def test_a_bad_size_is_22023_and_names_the_setting(text: str) -> None:
    settings = Settings({})
    with pytest.raises(QueryError) as e:
        settings.set("penstock.memory_limit", text)
    assert e.value.sqlstate == "22023" and "penstock.memory_limit" in e.value.message
    assert settings.memory_limit() is None  # unchanged


def test_the_tighter_cap_wins() -> None:
    assert lower(None, None) is None
    assert lower(8, None) == 8 and lower(None, 8) == 8 and lower(8, 3) == 3


def test_the_session_cap_binds_the_query_and_not_the_next(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    db = Database(ServerConfig(data_dir=str(data), device="cpu"))
    db.conn.register("u", str(write_groups(tmp_path / "u.parquet")))
    with pytest.raises(QueryError) as e:
        db.queries.execute(QUERY, lambda: None, session_limit=8 << 20)
    assert e.value.sqlstate == "53200" and "MiB" in e.value.message
    with pytest.raises(QueryError) as e:
        list(db.queries.stream(QUERY, lambda: None, session_limit=8 << 20).result)
    assert e.value.sqlstate == "53200"
    assert tuple(db.queries.execute(QUERY, lambda: None).result.to_arrow().to_pylist()[0].values()) == ANSWER


def test_set_over_the_wire_caps_the_session(pg_server: Running) -> None:
    write_groups(pg_server.data / "groups.parquet")
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTERNAL TABLE u STORED AS PARQUET LOCATION 'groups.parquet'")
        try:
            with pytest.raises(psycopg.errors.InvalidParameterValue):
                conn.execute("SET penstock.memory_limit = 'lots'")
            conn.execute("SET penstock.memory_limit = '8MB'")
            assert conn.execute("SHOW penstock.memory_limit").fetchall() == [("8MB",)]
            with pytest.raises(psycopg.Error) as e:
                conn.execute(QUERY).fetchall()
            assert e.value.sqlstate == "53200"
            conn.execute("RESET penstock.memory_limit")
            assert conn.execute(QUERY).fetchall() == [ANSWER]
        finally:
            conn.execute("DROP TABLE u")
