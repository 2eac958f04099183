"""The server's persistent catalog: which tables exist, in which files, in what format.

It is one JSON file, ``DIR/catalog.json``. Every change writes a new file next to it,
fsyncs it, renames it over the old one and fsyncs the directory, so a crash leaves the
catalog as it was before the change or as it is after, never half written. Tables made by
CREATE TABLE AS are Parquet files under ``DIR/tables/<id>``: a table's name is an SQL
identifier and never part of a path.

Each table has an owner and the users granted SELECT on it (server/access/privileges.py
decides who may do what). Locations are checked by server/access/locations.py: under a
data root, never the server's own files.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa

from penstock.errors import QueryError
from penstock.io.csv.reader import flag

CATALOG_FILE = "catalog.json"
FORMAT_VERSION = 2  # 2: owners and grants (a version-1 catalog reads as owned by the administrators, granted to PUBLIC)
READABLE_VERSIONS = (1, 2)
TABLES_DIR = "tables"
PUBLIC = "public"


@dataclass
class TableEntry:
    name: str
    format: str  # parquet | arrow | csv
    location: str  # absolute path, directory or glob
    columns: list[tuple[str, str]] | None = None  # declared (name, SQL type), if any
    created_by: str = "external"  # external | ctas (penstock owns the files)
    comment: str | None = None
    options: dict[str, str] = field(default_factory=dict)  # CSV: delimiter, quote, escape, header, encoding, skip_bad_rows
    owner: str | None = None  # None: the administrators' (tables from before owners existed)
    readers: list[str] = field(default_factory=list)  # users granted SELECT; "public": everyone


@dataclass
class Catalog:
    directory: Path
    tables: dict[str, TableEntry] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def open(directory: str | os.PathLike[str]) -> Catalog:
        d = Path(directory).resolve()
        d.mkdir(parents=True, exist_ok=True)
        catalog = Catalog(d)
        path = d / CATALOG_FILE
        if path.exists():
            try:
                data = json.loads(path.read_text())
            except ValueError as e:
                raise QueryError(f"catalog {path} is not valid JSON: {e}", "XX001") from None
            version = data.get("version")
            if version not in READABLE_VERSIONS:
                raise QueryError(f"catalog {path} has format version {version}, "
                                 f"this penstock reads {', '.join(map(str, READABLE_VERSIONS))}", "XX001")
            for t in data.get("tables", []):
                columns = [tuple(c) for c in t["columns"]] if t.get("columns") is not None else None
                readers = t.get("readers", [PUBLIC] if version == 1 else [])
                entry = TableEntry(t["name"], t["format"], t["location"], columns,  # type: ignore[arg-type]
                                   t.get("created_by", "external"), t.get("comment"), t.get("options") or {},
                                   t.get("owner"), list(readers))
                catalog.tables[entry.name] = entry
        return catalog

    # -- the server's own files -------------------------------------------------------------
    @property
    def catalog_file(self) -> Path:
        return self.directory / CATALOG_FILE

    @property
    def tables_directory(self) -> Path:
        """Where CREATE TABLE AS writes: penstock's files, read only through the catalog."""
        return self.directory / TABLES_DIR

    def new_table_directory(self) -> Path:
        """A fresh directory name for a CREATE TABLE AS result (named by id, not by table)."""
        return self.tables_directory / uuid.uuid4().hex

    def owns_files(self, entry: TableEntry) -> bool:
        """Whether DROP removes the table's files: penstock wrote them, under tables/."""
        location = Path(entry.location).resolve()
        return entry.created_by == "ctas" and self.tables_directory.resolve() in location.parents

    def leftovers(self) -> list[Path]:
        """Directories under tables/ that no table uses: staging left by a crash or a kill
        during CREATE TABLE AS, or a result whose catalog entry was never written."""
        if not self.tables_directory.is_dir():
            return []
        used = {Path(e.location).resolve() for e in self.tables.values()}
        return [p for p in sorted(self.tables_directory.iterdir()) if p.resolve() not in used]

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


def check_declared(entry: TableEntry, schema: pa.Schema) -> None:
    """Declared columns of a Parquet/Arrow table must be the file's columns."""
    assert entry.columns is not None
    found = {f.name.lower(): f for f in schema}
    for name, sql_type in entry.columns:
        f = found.get(name.lower())
        if f is None:
            raise QueryError(f'column "{name}" is declared but not in {entry.location} '
                             f"(it has: {', '.join(schema.names)})", "42703")
        want = arrow_type(sql_type)
        have = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        same = have == want or (pa.types.is_string(want) and (pa.types.is_large_string(have) or
                                                              pa.types.is_string_view(have)))
        if not same and not (pa.types.is_timestamp(want) and pa.types.is_timestamp(have)):
            raise QueryError(f'column "{name}" is declared {sql_type} but {entry.location} has {have}', "42804")


CSV_OPTIONS = ("delimiter", "quote", "escape", "header", "encoding", "skip_bad_rows")
_TEXT_OPTIONS = ("delimiter", "quote", "escape", "encoding")


def csv_options(fmt: str, options: dict[str, str]) -> dict[str, str]:
    """CREATE EXTERNAL TABLE ... OPTIONS (delimiter ';', header 'false', encoding 'latin-1',
    skip_bad_rows 'true'), checked: CSV tables only, known keys, a one-character delimiter
    (quote and escape: one or none), a known encoding, boolean flags. Options not given are
    sniffed from the file when it is opened."""
    from penstock.io.csv.sniff import encoding_name

    for key, value in options.items():
        if key not in CSV_OPTIONS:
            raise QueryError(f'option "{key}" not recognized (CSV tables take {", ".join(CSV_OPTIONS)})', "42601")
        if fmt != "csv":
            raise QueryError(f'option "{key}" applies to CSV tables only', "42601")
        if key == "delimiter" and len(value) != 1:
            raise QueryError(f"delimiter must be one character, not {value!r}", "22023")
        if key in ("quote", "escape") and len(value) > 1:
            raise QueryError(f"{key} must be one character or empty, not {value!r}", "22023")
        if key == "encoding":
            try:
                encoding_name(value)
            except ValueError as e:
                raise QueryError(str(e), "22023") from None
        if key not in _TEXT_OPTIONS:
            try:
                flag(value)
            except ValueError:
                raise QueryError(f'{key} requires a Boolean value, not "{value}"', "22023") from None
    return dict(options)


def register_options(options: dict[str, str]) -> dict[str, object]:
    """The catalog's CSV options as Connection.register's keywords (checked by csv_options)."""
    return {key: value if key in _TEXT_OPTIONS else flag(value) for key, value in options.items()}
