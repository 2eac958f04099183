"""Writing a (minimized) failure to disk, and grouping failures into distinct bugs.

Each failure becomes a folder: `query.sql` (the PostgreSQL text penstock ran, with the
DuckDB text and the TLP predicate as comments), the tables in their original formats
under `data/`, `answers.txt` (both engines' answers or errors, or the TLP difference),
and `repro.py`, a standalone script that rebuilds the tables from inline values (they are
tiny once minimized) and runs both engines, and `postgres.sql`, the same tables and query
for psql (PostgreSQL's side of a PostgreSQL-oracle failure). `signature` is what `scripts/fuzz.py` groups
failures by: the oracle, the short reason and the features the minimized query uses.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from .model import Node, Query, Select, features, render, render_expr
from .runner import Outcome
from .tables import Dataset

REPRO = '''"""Reproduction {name}: {reason} ({oracle}).  Run: .venv/bin/python {folder}/repro.py"""
import datetime
from decimal import Decimal
import duckdb, pyarrow as pa, penstock

tables = {{
{tables}
}}
formats = {formats!r}
sql = {sql!r}
duck_sql = {duck_sql!r}
tlp_partitions = {parts!r}  # TLP: the query must equal these three combined

db = penstock.connect(device="cpu", strict=True)
duck = duckdb.connect()
duck.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
duck.execute("SET TimeZone = 'UTC'")
import tempfile, pathlib, pyarrow.parquet as pq, pyarrow.feather as feather
tmp = pathlib.Path(tempfile.mkdtemp())
for name, t in tables.items():
    if formats.get(name) == "parquet":
        pq.write_table(t, tmp / f"{{name}}.parquet", row_group_size=64)
        db.register(name, str(tmp / f"{{name}}.parquet"))
    elif formats.get(name) == "arrow":
        feather.write_feather(t, tmp / f"{{name}}.arrow", compression="uncompressed")
        db.register(name, str(tmp / f"{{name}}.arrow"))
    else:
        db.register_arrow(name, t)
    duck.register(name, t)
print(sql)
try:
    print("penstock:", db.sql(sql).to_arrow().to_pylist())
except Exception as e:
    print("penstock error:", type(e).__name__, e)
try:
    print("duckdb:  ", duck.sql(duck_sql).to_arrow_table().to_pylist())
except Exception as e:
    print("duckdb error:", type(e).__name__, e)
for part in tlp_partitions:
    print(part)
    print("  penstock:", db.sql(part).to_arrow().to_pylist())
'''


def _type_expr(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return "pa.dictionary(pa.int32(), pa.string())"
    if pa.types.is_decimal(t):
        return f"pa.decimal128({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return f"pa.timestamp({t.unit!r})"
    names = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "float": "float32",
             "double": "float64", "string": "string", "bool": "bool_", "date32[day]": "date32"}
    return f"pa.{names.get(str(t), str(t))}()"


def _value(v: Any) -> str:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return f"float({str(v)!r})"
    return repr(v)


def _table_expr(t: pa.Table) -> str:
    cols = []
    for f, c in zip(t.schema, t.columns):
        values = "[" + ", ".join(_value(v) for v in c.to_pylist()) + "]"
        if pa.types.is_dictionary(f.type):
            cols.append(f"{f.name!r}: pa.array({values}, pa.string()).dictionary_encode()")
        else:
            cols.append(f"{f.name!r}: pa.array({values}, {_type_expr(f.type)})")
    return "pa.table({" + ", ".join(cols) + "})"


def _sql_value(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return f"'{'NaN' if math.isnan(v) else ('Infinity' if v > 0 else '-Infinity')}'"
        return repr(v)
    if isinstance(v, (int, Decimal)):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def pg_script(tables: dict[str, pa.Table], sql: str) -> str:
    """The tables as PostgreSQL statements, then the query: psql -f reproduces PostgreSQL's side."""
    from .postgres import column_type

    out = []
    for name, t in tables.items():
        cols = ", ".join(f"{f.name} {column_type(f.type)}" for f in t.schema)
        out.append(f"DROP TABLE IF EXISTS {name};\nCREATE TABLE {name} ({cols});")
        rows = list(zip(*(c.to_pylist() for c in t.columns)))
        if rows:
            values = ",\n  ".join("(" + ", ".join(_sql_value(v) for v in r) + ")" for r in rows)
            out.append(f"INSERT INTO {name} VALUES\n  {values};")
    return "SET TimeZone = 'UTC';\n" + "\n".join(out) + f"\n{sql};\n"


def signature(oracle: str, reason: str, q: Query) -> str:
    return f"{oracle}|{reason}|{','.join(features(q))}"


def write_failure(out: Path, name: str, q: Query, p: Node | None, ds: Dataset, outcome: Outcome,
                  meta: dict[str, Any]) -> Path:
    sig = signature(outcome.oracle, outcome.reason, q)
    digest = hashlib.sha1(sig.encode()).hexdigest()[:8]
    folder = out / f"{name}-{outcome.reason.replace(' ', '_').replace(':', '')}-{digest}"
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "data").mkdir(parents=True)
    sql, duck_sql = render(q, "pg"), render(q, "duck")
    ptext = render_expr(p, "pg") if p is not None else None
    head = [f"-- {outcome.oracle}: {outcome.reason}", f"-- case {name}", f"-- features: {', '.join(features(q))}"]
    if ptext:
        head.append(f"-- TLP predicate: {ptext}")
    head.append(f"-- DuckDB text: {duck_sql}")
    (folder / "query.sql").write_text("\n".join(head) + "\n" + sql + ";\n")
    (folder / "answers.txt").write_text(outcome.detail + "\n")
    for tname, path in ds.paths.items():
        if path.exists():
            shutil.copy(path, folder / "data" / path.name)
    tables = {n: t for n, t in ds.tables.items() if n in sql or n in (duck_sql or "")}
    body = ",\n".join(f"    {n!r}: {_table_expr(t)}" for n, t in tables.items())
    parts: list[str] = []
    if outcome.oracle == "tlp" and p is not None and isinstance(q, Select):
        from .tlp import partitions
        parts = [render(x, "pg") for x in partitions(q, p)]
    (folder / "postgres.sql").write_text(pg_script(tables, sql))
    (folder / "repro.py").write_text(REPRO.format(name=name, reason=outcome.reason, oracle=outcome.oracle,
                                                  folder=folder, tables=body, formats=ds.formats, sql=sql,
                                                  duck_sql=duck_sql, parts=parts))
    meta = dict(meta, signature=sig, reason=outcome.reason, oracle=outcome.oracle, sql=sql, duck_sql=duck_sql,
                tlp_predicate=ptext, rows={n: t.num_rows for n, t in tables.items()})
    (folder / "meta.json").write_text(json.dumps(meta, indent=2, default=str))
    return folder
