"""CSV files, streamed block by block, read as DuckDB reads them. Options not given are
sniffed from a sample of the first file (io/csv/sniff.py): delimiter, quote, escape, header.
Column types are declared, or inferred once from a sample (the first SAMPLE_BYTES) of the
first file that has rows, and then imposed on every row of every file (and on DataFusion),
so both engines read the same types and a bad value past the sample is an error, not a
column quietly widened to text. A file with a header and no rows gives no types to infer:
declare them (an error says so).

Malformed input is an error naming the file, line and column, with PostgreSQL's SQLSTATE
(22P02 a value that is not of its column's type, 22021 bytes that are not of the table's
encoding, 22P04 a row with the wrong number of fields or a quote that never closes), unless
the table was registered with skip_bad_rows: then such rows are left out and counted
(`skipped`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from penstock.errors import FileError
from penstock.io.csv.errors import bad_bytes, bad_value, check_quotes, parse_error
from penstock.io.csv.sniff import SAMPLE_BYTES, encoding_name, parse_options, sample, sniff
from penstock.io.tables import ScanBatch

BLOCK_SIZE = 16 << 20


@dataclass(frozen=True)
class CsvOptions:
    """A CSV table's options; None: sniffed from the file (see io/csv/sniff.py)."""
    delimiter: str | None = None
    header: bool | None = None  # without one, columns are column1, column2, ... unless declared
    skip_bad_rows: bool = False
    quote: str | None = None  # "": no quoting
    escape: str | None = None  # "": a quote inside a quoted value is doubled
    encoding: str = "utf-8"


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
        self.options = self._resolved(files[0], options or CsvOptions(), declared)
        self.skipped: dict[str, int] = {}  # file -> rows left out (skip_bad_rows)
        self._quotes_checked: dict[str, tuple[int, int]] = {}  # file -> (size, mtime) its quotes were checked at
        names = declared.names if declared is not None else None
        if declared is not None:  # a header must name the declared columns, in order
            found = self._inferred(files[0], names)[0]
            if self.options.header and found.names != declared.names:
                raise FileError(f"CSV file {files[0]} has columns {', '.join(found.names)}, "
                                f"declared: {', '.join(declared.names)}", str(files[0]), "42804")
            self.schema = declared
            return
        for path in files:  # the first file with rows gives the types
            found, has_rows = self._inferred(path, names)
            if has_rows:
                break
        else:
            raise FileError(f"CSV file {files[0]} has no rows to infer column types from: declare them "
                            "(register(..., schema=...), -t 't=file.csv?columns=a int,b text', or "
                            "CREATE EXTERNAL TABLE t (a int, b text) ...)", str(files[0]), "22023")
        # text that looks like nothing else stays text; NULL-only columns become text too
        self.schema = pa.schema([pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f
                                 for f in found])
        for f in self.schema:
            if pa.types.is_binary(f.type):  # pyarrow's reading of bytes that are not UTF-8
                raise bad_bytes(path, self.options.encoding, f.name)

    @staticmethod
    def _resolved(path: Path, o: CsvOptions, declared: pa.Schema | None) -> CsvOptions:
        """The options with the ones not given sniffed from `path`, checked."""
        for what, value in (("delimiter", o.delimiter), ("quote", o.quote), ("escape", o.escape)):
            if value is not None and len(value) != 1 and not (what != "delimiter" and value == ""):
                raise FileError(f"CSV {what} must be one character, not {value!r}", str(path), "22023")
        try:
            encoding = encoding_name(o.encoding)
        except ValueError as e:
            raise FileError(str(e), str(path), "22023") from None
        try:
            d = sniff(path, encoding, o.delimiter, o.quote, o.escape, o.header,
                      declared.names if declared is not None else None)
        except OSError as e:
            raise FileError(f"could not read CSV file {path}: {e}", str(path)) from e
        return replace(o, delimiter=d.delimiter, header=d.header, quote=d.quote or "", escape=d.escape or "",
                       encoding=encoding)

    @property
    def stream_format(self) -> bool:
        """DataFusion gets what this reader reads where it cannot read the file alike: rows
        left out, another encoding, quoting other than RFC 4180's."""
        o = self.options
        return o.skip_bad_rows or o.encoding != "utf-8" or o.quote != '"' or o.escape != ""

    def num_rows(self) -> int | None:
        return None

    def read_all(self) -> pa.Table:
        batches = [b.batch for b in self.scan(self.schema.names)]
        return pa.Table.from_batches(batches, self.schema) if batches else self.schema.empty_table()

    # -- reading --------------------------------------------------------------------------
    def _reader(self, path: Path, types: pa.Schema | None, names: list[str] | None = None,
                columns: list[str] | None = None, block_size: int = BLOCK_SIZE,
                raw: bool = False, source: Any = None) -> pcsv.CSVStreamingReader:
        """pyarrow's reader of `path` (or of `source`, text already UTF-8); `raw`: the bytes
        undecoded, the header row skipped (its names are `names`), so that a row that does
        not decode can be left out."""
        o = self.options
        if source is not None:
            read = pcsv.ReadOptions(block_size=block_size, column_names=None if o.header else names,
                                    autogenerate_column_names=not o.header and names is None)
        elif raw:
            read = pcsv.ReadOptions(block_size=block_size, column_names=names, skip_rows=1 if o.header else 0)
        else:
            read = pcsv.ReadOptions(block_size=block_size, column_names=None if o.header else names,
                                    autogenerate_column_names=not o.header and names is None,
                                    encoding=o.encoding)
        handler = self._skip_row(path) if o.skip_bad_rows else None
        convert = pcsv.ConvertOptions(column_types=types, include_columns=columns,
                                      strings_can_be_null=True) if types is not None else None
        try:
            return pcsv.open_csv(path if source is None else source, read_options=read, parse_options=parse_options(o, handler),
                                 convert_options=convert)
        except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
            raise self._error(path, e) from e

    def _inferred(self, path: Path, names: list[str] | None) -> tuple[pa.Schema, bool]:
        """(the column types pyarrow infers from the file's first SAMPLE_BYTES, whether it has
        rows). With skip_bad_rows, from the sample decoded with bytes that do not decode
        replaced: its rows that do not decode are left out later, not refused now."""
        try:
            if self.options.skip_bad_rows:
                text, _ = sample(path, self.options.encoding)
                source = pa.BufferReader(text.encode())
                reader = self._reader(path, None, names, block_size=SAMPLE_BYTES + 1, source=source)
            else:
                reader = self._reader(path, None, names, block_size=SAMPLE_BYTES)
        except FileError as e:
            if "straddling" not in e.message:
                raise
            reader = self._reader(path, None, names)  # a row longer than the sample
        schema = reader.schema
        try:
            has_rows = reader.read_next_batch().num_rows > 0
        except StopIteration:
            has_rows = False
        except (OSError, pa.ArrowException, UnicodeDecodeError):
            has_rows = True  # the scan reports it, with its line
        if not self.options.header and names is None:  # f0, f1 ... -> column1, column2 ...
            schema = pa.schema([pa.field(f"column{i + 1}", f.type) for i, f in enumerate(schema)])
        return schema, has_rows

    def _skip_row(self, path: Path) -> Callable[[Any], str]:
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
                check_quotes(path, self.options.quote, self.options.escape)
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
            except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
                raise self._error(path, e) from e

    def _lenient_batches(self, path: Path, columns: list[str]) -> Iterator[pa.RecordBatch]:
        """Every column read as bytes, then decoded and converted; rows with a value that
        does not decode or convert are left out and counted. All columns are checked, not
        only `columns`, so that which rows a table has does not depend on the query."""
        raw = pa.schema([pa.field(n, pa.binary()) for n in self.schema.names])
        wanted = list(self.schema)
        reader = self._reader(path, raw, self.schema.names, None, raw=True)
        for batch in self._read(path, reader):
            keep = pa.array([True] * batch.num_rows)
            converted = []
            for f in wanted:
                text, decoded = _decode(batch.column(f.name), self.options.encoding)
                values, ok = _convert(text, f.type)
                converted.append(values)
                keep = pc.and_(keep, pc.and_(decoded, ok))
            dropped = batch.num_rows - pc.sum(keep).as_py() if batch.num_rows else 0
            if dropped:
                self.skipped[str(path)] = self.skipped.get(str(path), 0) + dropped
            out = pa.record_batch(converted, schema=pa.schema(wanted)).select(columns)
            yield out.filter(keep) if dropped else out

    def _error(self, path: Path, e: Exception) -> FileError:
        text = str(e)
        if isinstance(e, UnicodeDecodeError):
            return bad_bytes(path, self.options.encoding)
        if "Expected" in text and "columns, got" in text:
            return parse_error(path, text, bool(self.options.header), self.options.encoding)
        if "conversion error" in text or "invalid UTF8" in text or "invalid UTF-8" in text:
            return bad_value(path, text, self.schema, self.options)
        return FileError(f"could not read CSV file {path}: {text}", str(path))


def _decode(column: pa.Array, encoding: str) -> tuple[pa.Array, pa.Array]:
    """(the byte column as text, which values decoded: NULL or good bytes)."""
    if encoding == "utf-8":
        try:
            return pc.cast(column, pa.string()), pa.array([True] * len(column))
        except pa.ArrowInvalid:
            pass
    values: list[str | None] = []
    ok: list[bool] = []
    for v in column.to_pylist():  # another encoding, or a batch with bytes that do not decode
        try:
            values.append(None if v is None else v.decode(encoding))
            ok.append(True)
        except UnicodeDecodeError:
            values.append(None)
            ok.append(False)
    return pa.array(values, pa.string()), pa.array(ok)


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
