"""The server's persistent catalog: which tables exist, in which files, in what format.

It is one JSON file, ``DIR/catalog.json``. Every change writes a new file next to it,
fsyncs it, renames it over the old one and fsyncs the directory, so a crash leaves the
catalog as it was before the change or as it is after, never half written. Tables made by
CREATE TABLE AS are Parquet files under ``DIR/tables``.

Locations must lie under one of the data roots (the data directory itself and the roots
given with ``--data-root``); relative locations are taken relative to the data directory.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa

from penstock.errors import QueryError

CATALOG_FILE = "catalog.json"
FORMAT_VERSION = 1
INSUFFICIENT_PRIVILEGE = "42501"


@dataclass
class TableEntry:
    name: str
    format: str  # parquet | arrow | csv
    location: str  # absolute path, directory or glob
    columns: list[tuple[str, str]] | None = None  # declared (name, SQL type), if any
    created_by: str = "external"  # external | ctas (penstock owns the files)
    comment: str | None = None
    options: dict[str, str] = field(default_factory=dict)  # CSV: delimiter, header, skip_bad_rows


@dataclass
class Catalog:
    directory: Path
    roots: list[Path] = field(default_factory=list)
    tables: dict[str, TableEntry] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def open(directory: str | os.PathLike[str], roots: list[str] | None = None) -> Catalog:
        d = Path(directory).resolve()
        d.mkdir(parents=True, exist_ok=True)
        all_roots = [d] + [Path(r).resolve() for r in roots or []]
        catalog = Catalog(d, all_roots)
        path = d / CATALOG_FILE
        if path.exists():
            try:
                data = json.loads(path.read_text())
            except ValueError as e:
                raise QueryError(f"catalog {path} is not valid JSON: {e}", "XX001") from None
            if data.get("version") != FORMAT_VERSION:
                raise QueryError(f"catalog {path} has format version {data.get('version')}, "
                                 f"this penstock reads {FORMAT_VERSION}", "XX001")
            for t in data.get("tables", []):
                columns = [tuple(c) for c in t["columns"]] if t.get("columns") is not None else None
                entry = TableEntry(t["name"], t["format"], t["location"], columns,  # type: ignore[arg-type]
                                   t.get("created_by", "external"), t.get("comment"), t.get("options") or {})
                catalog.tables[entry.name] = entry
        return catalog

    # -- locations --------------------------------------------------------------------------
    def resolve(self, location: str) -> str:
        """An absolute location under a data root, or a 42501 error naming the roots."""
        raw = Path(os.path.expanduser(location))
        absolute = raw if raw.is_absolute() else self.directory / raw
        # resolve the part before any glob character, so symlinks cannot leave the roots
        text = str(absolute)
        cut = min([text.index(c) for c in "*?[" if c in text] or [len(text)])
        head, tail = text[:cut], text[cut:]
        if tail:
            folder, _, partial = head.rpartition("/")
            base = Path(folder or "/").resolve()
            resolved = f"{base}/{partial}{tail}"
            if ".." in Path(tail).parts:
                raise QueryError(f'location "{location}" may not contain ".." after a wildcard',
                                 INSUFFICIENT_PRIVILEGE)
        else:
            base = Path(head).resolve()
            resolved = str(base)
        if not any(base == r or r in base.parents for r in self.roots):
            roots = ", ".join(str(r) for r in self.roots)
            raise QueryError(f'location "{location}" is outside the data roots ({roots})', INSUFFICIENT_PRIVILEGE)
        return resolved

    def table_directory(self, name: str) -> Path:
        return self.directory / "tables" / name

    # -- changes ----------------------------------------------------------------------------
    def add(self, entry: TableEntry) -> None:
        with self.lock:
            tables = dict(self.tables)
            tables[entry.name] = entry
            self._write(tables)
            self.tables = tables

    def remove(self, name: str) -> TableEntry:
        with self.lock:
            tables = dict(self.tables)
            entry = tables.pop(name)
            self._write(tables)
            self.tables = tables
            return entry

    def _write(self, tables: dict[str, TableEntry]) -> None:
        data = {"version": FORMAT_VERSION, "tables": [asdict(t) for t in tables.values()]}
        fd, tmp = tempfile.mkstemp(prefix=".catalog-", suffix=".json", dir=self.directory)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.directory / CATALOG_FILE)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dirfd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)


def arrow_type(sql_type: str) -> pa.DataType:
    """The Arrow type of a declared column type (CREATE EXTERNAL TABLE t (a int, ...))."""
    t = " ".join(sql_type.lower().split())
    m = re.match(r"^(?:numeric|decimal)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$", t)
    if m:
        precision = int(m.group(1) or 38)
        return pa.decimal128(precision, int(m.group(2) or 0)) if m.group(1) else pa.decimal128(38, 10)
    if re.match(r"^(?:varchar|character varying|char|character|bpchar)\s*(\(\s*\d+\s*\))?$", t):
        return pa.string()
    simple = {
        "smallint": pa.int16(), "int2": pa.int16(), "integer": pa.int32(), "int": pa.int32(), "int4": pa.int32(),
        "bigint": pa.int64(), "int8": pa.int64(), "real": pa.float32(), "float4": pa.float32(),
        "double precision": pa.float64(), "double": pa.float64(), "float8": pa.float64(), "float": pa.float64(),
        "text": pa.string(), "string": pa.string(), "boolean": pa.bool_(), "bool": pa.bool_(),
        "date": pa.date32(), "timestamp": pa.timestamp("us"), "timestamp without time zone": pa.timestamp("us"),
        "timestamptz": pa.timestamp("us", "UTC"), "timestamp with time zone": pa.timestamp("us", "UTC"),
        "bytea": pa.binary(),
    }
    if t not in simple:
        raise QueryError(f'type "{sql_type}" is not supported in a column declaration', "42704")
    return simple[t]
