"""penstock.connect() and Result: conversions, engine reporting, fallback and strict mode,
parameters, in-memory tables, unregistering, and device selection."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pyarrow as pa
import pytest

import penstock

WINDOW = "SELECT id, row_number() OVER (ORDER BY id) AS rn FROM t WHERE id IS NOT NULL"


def test_connect_cpu_reports_its_engine(cpu_db: Any) -> None:
    assert isinstance(cpu_db, penstock.Connection)
    assert cpu_db.backend.engine == "penstock-cpu"
    result = cpu_db.sql("SELECT 1 AS one")
    assert result.engine == "penstock-cpu"
    assert result.to_arrow().to_pylist() == [{"one": 1}]


def test_result_conversions(sample_db: Any, sample_table: pa.Table) -> None:
    result = sample_db.sql("SELECT id, grp, m, d FROM t WHERE id <= 3 ORDER BY id")
    assert isinstance(result, penstock.Result)
    assert result.engine == "penstock-cpu"
    assert result.fallback_reason is None
    assert result.num_rows == 3
    table = result.to_arrow()
    assert isinstance(table, pa.Table)
    assert table.column_names == ["id", "grp", "m", "d"]
    assert table.schema.field("m").type == pa.decimal128(10, 2)
    assert table.schema.field("d").type == pa.date32()
    assert table.to_pylist() == sample_table.select(["id", "grp", "m", "d"]).slice(0, 3).to_pylist()
    frame = result.to_pandas()
    assert list(frame.columns) == ["id", "grp", "m", "d"]
    assert frame["id"].tolist() == [1, 2, 3]
    assert frame["grp"].tolist() == ["a", "b", "a"]
    assert result.metrics is not None
    assert "penstock-cpu" in repr(result)


def test_empty_result_keeps_its_schema(sample_db: Any) -> None:
    result = sample_db.sql("SELECT id, grp FROM t WHERE id > 100")
    assert result.num_rows == 0
    assert result.to_arrow().column_names == ["id", "grp"]
    assert result.to_pandas().shape == (0, 2)


def test_unsupported_query_falls_back_to_datafusion(sample_db: Any) -> None:
    result = sample_db.sql(WINDOW)
    assert result.engine == "datafusion"
    assert isinstance(result.fallback_reason, str) and result.fallback_reason.strip()
    assert "window" in result.fallback_reason.lower()
    rows = sorted(result.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": i, "rn": i} for i in range(1, 6)]
    assert "datafusion" in repr(result)


def test_fallback_of_unsupported_window_without_order(sample_db: Any) -> None:
    result = sample_db.sql("SELECT row_number() OVER () AS rn FROM t")
    assert result.engine == "datafusion"
    assert result.fallback_reason
    assert sorted(result.to_arrow().column("rn").to_pylist()) == [1, 2, 3, 4, 5, 6]


def test_strict_mode_raises_unsupported(sample_parquet: Any) -> None:
    db = penstock.connect(device="cpu", strict=True)
    db.register("t", sample_parquet)
    with pytest.raises(penstock.Unsupported) as info:
        db.sql(WINDOW)
    assert "window" in str(info.value).lower()
    assert isinstance(info.value, penstock.PenstockError)
    # strict mode still runs what penstock supports
    assert db.sql("SELECT count(*) AS n FROM t").to_arrow().to_pylist() == [{"n": 6}]


def ids(result: Any) -> list[int]:
    assert result.engine == "penstock-cpu", result.fallback_reason
    return sorted(result.to_arrow().column("id").to_pylist(), key=lambda v: (v is None, v or 0))


def test_positional_parameters(sample_db: Any) -> None:
    assert ids(sample_db.sql("SELECT id FROM t WHERE id > $1", params=[3])) == [4, 5]
    assert ids(sample_db.sql("SELECT id FROM t WHERE id > $1 AND grp = $2", params=[1, "a"])) == [3]


def test_named_parameters(sample_db: Any) -> None:
    assert ids(sample_db.sql("SELECT id FROM t WHERE id > $lo", params={"lo": 3})) == [4, 5]


def test_date_parameter(sample_db: Any) -> None:
    result = sample_db.sql("SELECT id FROM t WHERE d > $1", params=[datetime.date(2020, 1, 1)])
    assert ids(result) == [2, 5, None]


def test_decimal_parameter(sample_db: Any) -> None:
    assert ids(sample_db.sql("SELECT id FROM t WHERE m >= $1", params=[decimal.Decimal("2.25")])) == [2, 3, None]
    assert ids(sample_db.sql("SELECT id FROM t WHERE m < $1", params=[decimal.Decimal("1")])) == [5]


def test_parameter_in_select_list(sample_db: Any) -> None:
    result = sample_db.sql("SELECT id + $1 AS id FROM t WHERE id IS NOT NULL", params=[100])
    assert ids(result) == [101, 102, 103, 104, 105]


def test_missing_parameter_is_a_query_error(sample_db: Any) -> None:
    with pytest.raises(penstock.QueryError) as info:
        sample_db.sql("SELECT id FROM t WHERE id > $1")
    assert "$1" in info.value.message


def test_register_arrow(cpu_db: Any) -> None:
    table = pa.table({"k": pa.array([3, None, 1], pa.int32()), "name": ["c", "n", None]})
    cpu_db.register_arrow("mem", table)
    result = cpu_db.sql("SELECT k, name FROM mem WHERE k IS NOT NULL ORDER BY k")
    assert result.engine == "penstock-cpu"
    assert result.to_arrow().to_pylist() == [{"k": 1, "name": None}, {"k": 3, "name": "c"}]
    agg = cpu_db.sql("SELECT count(*) AS n, count(k) AS ck, count(name) AS cn FROM mem")
    assert agg.to_arrow().to_pylist() == [{"n": 3, "ck": 2, "cn": 2}]


def test_register_arrow_replaces_a_table(cpu_db: Any) -> None:
    cpu_db.register_arrow("mem", pa.table({"v": [1, 2]}))
    assert cpu_db.sql("SELECT sum(v) AS s FROM mem").to_arrow().to_pylist() == [{"s": 3}]
    cpu_db.register_arrow("mem", pa.table({"v": [10, 20, 30]}))
    assert cpu_db.sql("SELECT sum(v) AS s FROM mem").to_arrow().to_pylist() == [{"s": 60}]


def test_unregister(sample_db: Any) -> None:
    assert sample_db.sql("SELECT count(*) AS n FROM t").to_arrow().to_pylist() == [{"n": 6}]
    sample_db.unregister("t")
    with pytest.raises(penstock.QueryError) as info:
        sample_db.sql("SELECT count(*) AS n FROM t")
    assert info.value.sqlstate == "42P01"
    assert "t" not in sample_db.tables


def test_gpu_request_without_a_gpu_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from penstock.device import gpu_available

    if gpu_available():  # a GPU machine: make it look like this one
        monkeypatch.setenv("PENSTOCK_DISABLE_GPU", "1")
    with pytest.raises(penstock.PenstockError) as info:
        penstock.connect(device="gpu")
    assert "GPU" in str(info.value)
    assert not isinstance(info.value, penstock.QueryError)


def test_unknown_device_is_a_clear_error() -> None:
    with pytest.raises(penstock.PenstockError) as info:
        penstock.connect(device="tpu")
    assert "tpu" in str(info.value)


def test_auto_device_without_a_gpu_is_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PENSTOCK_DISABLE_GPU", "1")
    db = penstock.connect()
    assert db.backend.engine == "penstock-cpu"
