"""bytea columns carried as payload through the operators that move rows (joins, sorts with
LIMIT/OFFSET, UNION ALL, a CTE read twice, filters on other columns), read from Parquet
(FIXED_LEN_BYTE_ARRAY, decoded by the device's kernels) and Arrow IPC, on both devices:
the answers equal DuckDB's over the same files, and penstock's engine ran them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import penstock

QUERIES = [
    "SELECT a.id, a.sig, b.tag FROM a JOIN b ON a.k = b.k WHERE a.id < 300 ORDER BY a.id, b.id",
    "SELECT id, sig FROM a ORDER BY id DESC LIMIT 20 OFFSET 5",
    "SELECT id, sig FROM a WHERE k = 3 UNION ALL SELECT id + 100000, tag FROM b WHERE k = 3 ORDER BY 1",
    "WITH t AS (SELECT id, sig FROM a WHERE id % 3 = 0) "
    "SELECT x.id, x.sig, y.sig AS other FROM t x JOIN t y ON x.id = y.id + 3 ORDER BY x.id",
    "SELECT k, count(sig) AS n, min(id) AS first FROM a GROUP BY k ORDER BY k",
    "SELECT id, sig FROM a WHERE sig IS NULL ORDER BY id LIMIT 10",
    "SELECT b.id, b.tag, a.sig FROM b LEFT JOIN a ON a.id = b.id * 7 ORDER BY b.id",
]


def tables(rows: int = 2000, seed: int = 3) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    sig = rng.integers(0, 256, (rows, 16), dtype=np.uint8)
    valid = rng.random(rows) > 0.1
    a = pa.table({"id": pa.array(np.arange(rows, dtype=np.int64)), "k": pa.array(np.arange(rows) % 11, pa.int32()),
                  "sig": pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), rows, [
                      pa.py_buffer(np.packbits(valid, bitorder="little")), pa.py_buffer(sig.tobytes())])})
    small = 150
    tag = rng.integers(0, 4, (small, 16), dtype=np.uint8)  # repeats: a dictionary in Parquet
    b = pa.table({"id": pa.array(np.arange(small, dtype=np.int64)), "k": pa.array(np.arange(small) % 5, pa.int32()),
                  "tag": pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), small, [None, pa.py_buffer(tag.tobytes())])})
    return a, b


@pytest.fixture(scope="module", params=["parquet", "arrow"])
def files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bytea")
    made = {}
    for name, table in zip("ab", tables()):
        if request.param == "parquet":
            made[name] = folder / f"{name}.parquet"
            pq.write_table(table, made[name], row_group_size=500, data_page_size=2048)
        else:
            made[name] = folder / f"{name}.arrow"
            feather.write_feather(table, made[name], compression="uncompressed", chunksize=500)
    return made


def duck(files: dict[str, Path], sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    for name, path in files.items():
        source = f"read_parquet('{path}')" if path.suffix == ".parquet" else f"'{path}'"
        if path.suffix == ".arrow":
            con.register(f"{name}_arrow", feather.read_table(path))
            source = f"{name}_arrow"
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM {source}")
    return [tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in row) for row in con.sql(sql).fetchall()]


@pytest.mark.parametrize("sql", QUERIES)
def test_bytea_payloads_equal_duckdb(files: dict[str, Path], sql: str, device: str) -> None:
    db = penstock.connect(device=device, parquet_decode="device")
    for name, path in files.items():
        db.register(name, path)
    result = db.sql(sql)
    got = [tuple(row.values()) for row in result.to_arrow().to_pylist()]
    assert got == duck(files, sql)
    assert result.engine == f"penstock-{device}", (result.engine, result.fallback_reason)
