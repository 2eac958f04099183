"""GPU memory admission: slots, shares, waiting, running on the CPU when asked, running
alone. The policy is plain threading logic and is tested here on its own; the GPU test runs
concurrent queries through a server on the real device."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from penstock.server.admission import Admission
from server.conftest import start_server, stop_server


def test_slots_share_the_memory() -> None:
    a = Admission(4, 4000)
    grants = [a.acquire() for _ in range(4)]
    assert [g.memory_limit for g in grants] == [1000] * 4
    assert not a.acquire("cpu").on_gpu  # all busy: the CPU policy does not wait
    late = a.acquire("wait", max_wait=0.05)
    assert not late.on_gpu and late.waited >= 0.05
    a.release(grants[0])
    assert a.acquire("cpu").memory_limit == 1000


def test_a_waiting_query_gets_the_next_free_slot() -> None:
    a = Admission(1, 100)
    first = a.acquire()
    got: list = []
    t = threading.Thread(target=lambda: got.append(a.acquire("wait")))
    t.start()
    time.sleep(0.1)
    assert not got
    a.release(first)
    t.join(5)
    assert got and got[0].on_gpu and got[0].waited >= 0.09


def test_running_alone_takes_every_slot_and_blocks_newcomers() -> None:
    a = Admission(3, 300)
    one = a.acquire()
    result: list = []
    t = threading.Thread(target=lambda: result.append(a.acquire(alone=True)))
    t.start()
    time.sleep(0.05)
    assert not a.acquire("cpu").on_gpu  # an alone query is waiting: newcomers queue behind it
    a.release(one)
    t.join(5)
    alone = result[0]
    assert alone.slots == 3 and alone.memory_limit == 300
    assert not a.acquire("cpu").on_gpu
    a.release(alone)
    assert a.acquire("cpu").on_gpu


def test_cancel_while_waiting() -> None:
    a = Admission(1, 1)
    a.acquire()
    cancelled = threading.Event()
    cancelled.set()
    assert not a.acquire("wait", cancelled=cancelled).on_gpu


@pytest.mark.gpu
def test_concurrent_queries_on_the_gpu_are_admitted(tmp_path) -> None:
    """Eight sessions at once on a GPU with two slots and a small memory cap: every query
    answers right; queries beyond the slots either waited or ran on the CPU and said so."""
    import pyarrow.parquet as pq
    import numpy as np
    import pyarrow as pa

    n = 2_000_000
    pq.write_table(pa.table({"k": pa.array(np.arange(n) % 1000, pa.int64()), "v": pa.array(np.arange(n), pa.int64())}),
                   tmp_path / "big.parquet")
    running = start_server(tmp_path, device="gpu", gpu_slots=2, gpu_memory_limit=512 << 20)
    expected = int(np.arange(n).sum())
    notices: list[str] = []
    errors: list[BaseException] = []

    def client(policy: str) -> None:
        try:
            with psycopg.connect(running.dsn, autocommit=True) as conn:
                conn.add_notice_handler(lambda d: notices.append(d.message_primary))
                conn.execute(f"SET penstock.gpu_admission = {policy}")
                conn.execute("SET penstock.report_engine = on")
                for _ in range(5):
                    assert conn.execute("select sum(v) from big").fetchone() == (expected,)
        except BaseException as e:
            errors.append(e)
    try:
        with psycopg.connect(running.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTERNAL TABLE big STORED AS PARQUET LOCATION 'big.parquet'")
        threads = [threading.Thread(target=client, args=("cpu" if i % 2 else "wait",)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        assert any("penstock-gpu" in n for n in notices)
        assert all("penstock-gpu" in n or "penstock-cpu" in n or "slots" in n for n in notices)
    finally:
        stop_server(running)


