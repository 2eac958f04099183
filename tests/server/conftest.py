"""A real penstock server for the server tests: started in this process on a free port,
over a temporary data directory, with trust authentication on loopback (tests that need
SCRAM or TLS start their own)."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.server.database import ServerConfig
from penstock.server.server import Server


@dataclass
class Running:
    server: Server
    port: int
    data: Path

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=tester dbname=penstock"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(data: Path, **config: object) -> Running:
    """A server in a background thread; stop it with stop_server()."""
    cfg = ServerConfig(data_dir=str(data), port=0, device=str(config.pop("device", "cpu")),
                       auth=str(config.pop("auth", "trust")), **config)  # type: ignore[arg-type]
    server = Server(cfg)
    port = server.bind()
    threading.Thread(target=server.serve_forever, daemon=True, name="penstock-test-server").start()
    return Running(server, port, data)


def stop_server(running: Running) -> None:
    running.server.shutdown()


def sample_table() -> pa.Table:
    """A small table with one column of each common type (and NULLs)."""
    import datetime
    import decimal

    return pa.table({
        "id": pa.array([1, 2, 3, 4], pa.int32()),
        "big": pa.array([10_000_000_000, -5, None, 0], pa.int64()),
        "name": pa.array(["alpha", "beta", None, "it's"], pa.string()),
        "score": pa.array([1.5, -2.25, None, 1e20], pa.float64()),
        "amount": pa.array([decimal.Decimal("12.30"), None, decimal.Decimal("-0.05"), decimal.Decimal("1000.00")],
                           pa.decimal128(12, 2)),
        "day": pa.array([datetime.date(2024, 1, 31), datetime.date(1999, 12, 31), None, datetime.date(2000, 2, 29)]),
        "ts": pa.array([datetime.datetime(2024, 1, 31, 12, 30, 1, 500), None, datetime.datetime(1970, 1, 1),
                        datetime.datetime(2000, 1, 1)], pa.timestamp("us")),
        "flag": pa.array([True, False, None, True]),
    })


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A server with table `sample` (sample_table(), Parquet) in its catalog."""
    data = tmp_path_factory.mktemp("penstock-data")
    pq.write_table(sample_table(), data / "sample.parquet")
    running = start_server(data)
    import psycopg

    with psycopg.connect(running.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTERNAL TABLE sample STORED AS PARQUET LOCATION 'sample.parquet'")
    yield running
    stop_server(running)
