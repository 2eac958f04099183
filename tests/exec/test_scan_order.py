"""A plain scan's rows come back in file order (as PostgreSQL's sequential scan gives them),
however many threads or blocks wrote them: the planner adds the row's ordinal in the scan
(plan/expr.py RowOrdinal) and the executor sorts the result by it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import penstock

ROWS = 200_000


def table() -> pa.Table:
    return pa.table({"id": pa.array(range(ROWS), pa.int64()),
                     "v": pa.array([(i * 7919) % 1000 for i in range(ROWS)], pa.int64()),
                     "s": [f"r{i}" for i in range(ROWS)]})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("order")
    t = table()
    pq.write_table(t, root / "t.parquet", row_group_size=30_000)  # several batches
    pcsv.write_csv(t.slice(0, 20_000), root / "t.csv")
    return {"parquet": root / "t.parquet", "csv": root / "t.csv"}


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("sql", ["SELECT id, s FROM t WHERE v % 3 = 1", "SELECT * FROM t", "SELECT s, v * 2 AS w FROM t WHERE v > 500"])
def test_rows_come_back_in_file_order_every_run(device: str, files: dict[str, Path], fmt: str, sql: str) -> None:
    db = penstock.connect(device=device, strict=True)
    db.register("t", files[fmt])
    source = pq.read_table(files[fmt]) if fmt == "parquet" else pcsv.read_csv(files[fmt])
    ids = source.column("id").to_pylist()
    v = source.column("v").to_pylist()
    keep = [i for i, x in zip(ids, v) if ("v % 3 = 1" not in sql or x % 3 == 1) and ("v > 500" not in sql or x > 500)]
    for _ in range(3):
        result = db.sql(sql).to_arrow()
        assert result.num_rows == len(keep)
        got = result.column("s").to_pylist()
        assert got == [f"r{i}" for i in keep]
