"""Fixtures for the differential suite: the data (once per session), a penstock connection
per device with every table registered, and a DuckDB connection over the same files.

penstock is imported inside the fixture, not at module level, so that collecting this
folder (and the corpus lint test) works even while the engine cannot be imported; every
test that needs the engine then fails with the import error, which is the honest state."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from . import data

DUCKDB_SETTINGS = [
    # PostgreSQL puts NULLs last ascending and first descending; DuckDB's default is last.
    "SET default_null_order = 'nulls_last_on_asc_first_on_desc'",
    "SET TimeZone = 'UTC'",
]


def _duck_type(t: pa.DataType) -> str:
    names = {pa.int64(): "BIGINT", pa.int32(): "INTEGER", pa.bool_(): "BOOLEAN",
             pa.float64(): "DOUBLE", pa.date32(): "DATE", pa.timestamp("us"): "TIMESTAMP",
             pa.string(): "VARCHAR"}
    return names[t]


def open_duckdb(files: dict[str, data.TableFiles]) -> Any:
    """DuckDB with a view per table over the same files penstock reads.

    Arrow IPC files and in-memory tables are registered as pyarrow tables (DuckDB has no
    built-in Arrow IPC reader); CSV is read with the column types the data was written with."""
    con = duckdb.connect()
    for stmt in DUCKDB_SETTINGS:
        con.execute(stmt)
    for name, tf in files.items():
        path = str(tf.path).replace("'", "''")
        if tf.fmt == "parquet":
            src = f"{path}/*.parquet" if tf.path.is_dir() else path
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{src}')")
        elif tf.fmt == "csv":
            cols = ", ".join(f"'{f.name}': '{_duck_type(f.type)}'" for f in tf.schema)
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_csv('{path}', header=true, "
                        f"columns={{{cols}}})")
        elif tf.fmt == "arrow":
            con.register(name, feather.read_table(tf.path))
        elif tf.fmt == "memory":
            con.register(name, tf.table)
        else:
            raise ValueError(f"unknown format {tf.fmt}")
    return con


def register_penstock(db: Any, files: dict[str, data.TableFiles]) -> None:
    """Register every table with a penstock connection, exercising each registration path."""
    for name, tf in files.items():
        if tf.fmt == "memory":
            db.register_arrow(name, tf.table)
        else:
            db.register(name, str(tf.path))


@pytest.fixture(scope="session")
def diff_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, data.TableFiles]:
    """Every table written once per session (per xdist worker)."""
    return data.generate(Path(tmp_path_factory.mktemp("differential-data")))


@pytest.fixture(scope="session", params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def penstock_db(device: str, diff_files: dict[str, data.TableFiles]) -> Any:
    """strict=True: a query the executor cannot run raises instead of going to DataFusion."""
    import penstock

    db = penstock.connect(device=device, strict=True)
    register_penstock(db, diff_files)
    return db


@pytest.fixture(scope="session")
def fallback_db(diff_files: dict[str, data.TableFiles]) -> Any:
    """A lenient CPU connection: its DataFusion fallback is what the differential suite
    checks on the fallback engine (the device plays no part there)."""
    import penstock

    db = penstock.connect(device="cpu", strict=False)
    register_penstock(db, diff_files)
    return db


@pytest.fixture(scope="session")
def expected_engine(device: str) -> str:
    return f"penstock-{device}"


@pytest.fixture(scope="session")
def duck(diff_files: dict[str, data.TableFiles]) -> Iterator[Any]:
    con = open_duckdb(diff_files)
    yield con
    con.close()
