"""Opening a table: a file, a directory of files, or a glob; the format from the extension.

Every file of a table must have the same schema. Problems with files are reported as
FileError naming the file, at registration where possible (missing, unreadable, corrupt
footer) and otherwise when the file is read.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

import pyarrow as pa

from penstock.errors import UNDEFINED_FILE, FileError, QueryError

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
           ".ipc": "arrow", ".arrows": "arrow", ".csv": "csv"}


@dataclass
class ScanBatch:
    batch: pa.RecordBatch  # the requested columns only (may be none: SELECT count(*))
    rows: int
    bytes_read: int  # bytes of storage or memory this batch cost to read
    source: str  # the file it came from
    skipped: bool = False  # its statistics refuted the scan's filter: nothing was read


class TableReader(Protocol):
    format: str
    schema: pa.Schema
    files: list[Path]

    def num_rows(self) -> int | None: ...

    def scan(self, columns: list[str]) -> Iterator[ScanBatch]: ...


def list_files(location: str) -> list[Path]:
    """The files a location names: a file, a directory (its files, sorted), or a glob."""
    if any(c in location for c in "*?["):
        files = sorted(Path(p) for p in glob.glob(location, recursive=True) if os.path.isfile(p))
        if not files:
            raise FileError(f"no files match {location}", location, UNDEFINED_FILE)
        return files
    path = Path(location)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in FORMATS)
        if not files:
            raise FileError(f"directory {location} holds no .parquet, .arrow, .feather or .csv files",
                            location, UNDEFINED_FILE)
        return files
    if not path.exists():
        raise FileError(f"could not open file \"{location}\": No such file or directory", location,
                        UNDEFINED_FILE)
    if not os.access(path, os.R_OK):
        raise FileError(f"could not open file \"{location}\": Permission denied", location)
    return [path]


def guess_format(files: list[Path], location: str) -> str:
    kinds = {FORMATS.get(f.suffix.lower()) for f in files}
    if len(kinds) == 1 and None not in kinds:
        return kinds.pop()  # type: ignore[return-value]
    raise QueryError(f"cannot tell the format of {location} from its file names; "
                     "pass format='parquet', 'arrow' or 'csv'", "22023")


def open_table(location: str | os.PathLike[str], format: str | None = None,
               schema: pa.Schema | None = None, csv: Any = None) -> TableReader:
    """The table at `location`; `schema` declares a CSV file's column types (else inferred),
    `csv` its io.csv.CsvOptions (delimiter, quote, escape, header, encoding, skip_bad_rows)."""
    location = os.fspath(location)
    files = list_files(location)
    fmt = (format or guess_format(files, location)).lower()
    if fmt in ("feather", "ipc"):
        fmt = "arrow"
    if fmt == "parquet":
        from penstock.io.parquet.reader import ParquetTable

        return ParquetTable(files)
    if fmt == "arrow":
        from penstock.io.arrow.reader import ArrowTable

        return ArrowTable(files)
    if fmt == "csv":
        from penstock.io.csv.reader import CsvTable

        return CsvTable(files, schema, csv)
    raise QueryError(f"unknown format {format!r}: use 'parquet', 'arrow' or 'csv'", "22023")


def check_same_schema(files: list[Path], schemas: list[pa.Schema]) -> pa.Schema:
    first = schemas[0]
    for path, schema in zip(files[1:], schemas[1:]):
        if not schema.remove_metadata().equals(first.remove_metadata()):
            raise FileError(f"file {path} has a different schema from {files[0]}: {schema} vs {first}",
                            str(path), "42804")
    return first.remove_metadata()
