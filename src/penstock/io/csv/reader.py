"""CSV files, streamed block by block. The schema is declared, or inferred once from the
first block of the first file and then imposed on every file (and on DataFusion), so both
engines read the same types.

Malformed input is an error naming the file, line and column, with PostgreSQL's SQLSTATE
(22P02 a value that is not of its column's type, 22021 bytes that are not UTF-8, 22P04 a
row with the wrong number of fields or a quote that never closes), unless the table was
registered with skip_bad_rows: then such rows are left out and counted (`skipped`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from penstock.errors import FileError
from penstock.io.csv.errors import bad_value, check_quotes, first_bad_utf8, parse_error
from penstock.io.tables import ScanBatch

BLOCK_SIZE = 16 << 20


@dataclass(frozen=True)
class CsvOptions:
    delimiter: str = ","
    header: bool = True  # without one, columns are column1, column2, ... unless declared
    skip_bad_rows: bool = False


def flag(text: str) -> bool:
    """A CSV option's boolean (header, skip_bad_rows) as PostgreSQL's options spell them."""
    low = text.lower()
    if low not in ("true", "false", "on", "off", "1", "0"):
        raise ValueError(f"{text!r} is not a Boolean value (true or false)")
    return low in ("true", "on", "1")


class CsvTable:
    format = "csv"

    def __init__(self, files: list[Path], declared: pa.Schema | None = None, options: CsvOptions | None = None):
        self.files = files
        self.options = options or CsvOptions()
        if len(self.options.delimiter) != 1:
            raise FileError(f"CSV delimiter must be one character, not {self.options.delimiter!r}",
                            str(files[0]), "22023")
        self.skipped: dict[str, int] = {}  # file -> rows left out (skip_bad_rows)
        self._quotes_checked: dict[str, tuple[int, int]] = {}  # file -> (size, mtime) its quotes were checked at
        found = self._inferred(files[0], declared.names if declared is not None else None)
        if declared is not None:  # a header must name the declared columns, in order
            if self.options.header and found.names != declared.names:
                raise FileError(f"CSV file {files[0]} has columns {', '.join(found.names)}, "
                                f"declared: {', '.join(declared.names)}", str(files[0]), "42804")
            self.schema = declared
            return
        # text that looks like nothing else stays text; NULL-only columns become text too
        self.schema = pa.schema([pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f
                                 for f in found])
        for f in self.schema:
            if pa.types.is_binary(f.type):  # pyarrow's reading of bytes that are not UTF-8
                line = first_bad_utf8(files[0])
                raise FileError(f'invalid byte sequence for encoding "UTF8" in CSV file {files[0]}, '
                                f"line {line}, column {f.name}", str(files[0]), "22021")

    @property
    def stream_format(self) -> bool:
        """Rows left out must be left out by DataFusion too: it gets what this reader reads."""
        return self.options.skip_bad_rows

    def num_rows(self) -> int | None:
        return None

    def read_all(self) -> pa.Table:
        batches = [b.batch for b in self.scan(self.schema.names)]
        return pa.Table.from_batches(batches, self.schema) if batches else self.schema.empty_table()

    # -- reading --------------------------------------------------------------------------
    def _reader(self, path: Path, types: pa.Schema | None, names: list[str] | None = None,
                columns: list[str] | None = None) -> pcsv.CSVStreamingReader:
        o = self.options
        read = pcsv.ReadOptions(block_size=BLOCK_SIZE, column_names=None if o.header else names,
                                autogenerate_column_names=not o.header and names is None)
        handler = self._skip_row(path) if o.skip_bad_rows else None
        parse = pcsv.ParseOptions(delimiter=o.delimiter, newlines_in_values=True, invalid_row_handler=handler)
        convert = pcsv.ConvertOptions(column_types=types, include_columns=columns,
                                      strings_can_be_null=True) if types is not None else None
        try:
            return pcsv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert)
        except (OSError, pa.ArrowException) as e:
            raise self._error(path, e) from e

    def _inferred(self, path: Path, names: list[str] | None) -> pa.Schema:
        schema = self._reader(path, None, names).schema
        if not self.options.header and names is None:  # f0, f1 ... -> column1, column2 ...
            schema = pa.schema([pa.field(f"column{i + 1}", f.type) for i, f in enumerate(schema)])
        return schema

    def _skip_row(self, path: Path):  # type: ignore[no-untyped-def]
        def skip(row: object) -> str:
            self.skipped[str(path)] = self.skipped.get(str(path), 0) + 1
            return "skip"
        return skip

    def scan(self, columns: list[str]) -> Iterator[ScanBatch]:
        picked_columns = columns or [self.schema.names[0]]
        for path in self.files:
            stat = path.stat()
            size = stat.st_size
            if self._quotes_checked.get(str(path)) != (size, stat.st_mtime_ns):  # a file read once per change
                check_quotes(path)
                self._quotes_checked[str(path)] = (size, stat.st_mtime_ns)
            self.skipped.pop(str(path), None)
            if self.options.skip_bad_rows:
                batches = self._lenient_batches(path, picked_columns)
            else:
                batches = self._read(path, self._reader(path, self.schema, self.schema.names, picked_columns))
            first = True
            for batch in batches:
                picked = batch.select(columns) if columns else pa.record_batch([], names=[])
                yield ScanBatch(picked, batch.num_rows, size if first else 0, str(path))
                first = False

    def _read(self, path: Path, reader: pcsv.CSVStreamingReader) -> Iterator[pa.RecordBatch]:
        """The reader's batches; a malformed file raises FileError naming line and column."""
        while True:
            try:
                yield reader.read_next_batch()
            except StopIteration:
                return
            except (OSError, pa.ArrowException) as e:
                raise self._error(path, e) from e

    def _lenient_batches(self, path: Path, columns: list[str]) -> Iterator[pa.RecordBatch]:
        """Every column read as text, then converted; rows with a value that does not
        convert are left out and counted."""
        text = pa.schema([pa.field(n, pa.string()) for n in self.schema.names])
        wanted = [self.schema.field(n) for n in columns]
        for batch in self._read(path, self._reader(path, text, self.schema.names, columns)):
            keep = pa.array([True] * batch.num_rows)
            converted = []
            for f in wanted:
                values, ok = _convert(batch.column(f.name), f.type)
                converted.append(values)
                keep = pc.and_(keep, ok)
            dropped = batch.num_rows - pc.sum(keep).as_py() if batch.num_rows else 0
            if dropped:
                self.skipped[str(path)] = self.skipped.get(str(path), 0) + dropped
            out = pa.record_batch(converted, schema=pa.schema(wanted))
            yield out.filter(keep) if dropped else out

    def _error(self, path: Path, e: Exception) -> FileError:
        text = str(e)
        if "Expected" in text and "columns, got" in text:
            return parse_error(path, text, self.options.header)
        if "conversion error" in text or "invalid UTF8" in text or "invalid UTF-8" in text:
            return bad_value(path, text, self.schema, self.options)
        return FileError(f"could not read CSV file {path}: {text}", str(path))


def _convert(column: pa.Array, to: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """(the text column converted to `to`, which values converted: NULL or a good value)."""
    if pa.types.is_string(to):
        return column, pa.array([True] * len(column))
    try:
        return pc.cast(column, to), pa.array([True] * len(column))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    values, ok = [], []
    for v in column.to_pylist():  # the slow path, for a batch with a bad value only
        try:
            values.append(None if v is None else pc.cast(pa.array([v]), to)[0].as_py())
            ok.append(True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            values.append(None)
            ok.append(False)
    return pa.array(values, to), pa.array(ok)
