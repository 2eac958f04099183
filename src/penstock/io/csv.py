"""CSV files with a header row, streamed block by block. The schema is inferred once from
the first block of the first file and then imposed on every file (and on DataFusion), so
both engines read the same types."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pcsv

from penstock.errors import FileError
from penstock.io.tables import ScanBatch

BLOCK_SIZE = 16 << 20


def _reader(path: Path, schema: pa.Schema | None = None, columns: list[str] | None = None) -> pcsv.CSVStreamingReader:
    try:
        convert = pcsv.ConvertOptions(column_types=schema, include_columns=columns,
                                      strings_can_be_null=True) if schema is not None else None
        return pcsv.open_csv(path, read_options=pcsv.ReadOptions(block_size=BLOCK_SIZE),
                             convert_options=convert)
    except (OSError, pa.ArrowException) as e:
        raise FileError(f"could not read CSV file {path}: {e}", str(path)) from e


class CsvTable:
    format = "csv"

    def __init__(self, files: list[Path], declared: pa.Schema | None = None):
        self.files = files
        if declared is not None:  # the header must name the declared columns, in order
            found = _reader(files[0]).schema.names
            if found != declared.names:
                raise FileError(f"CSV file {files[0]} has columns {', '.join(found)}, "
                                f"declared: {', '.join(declared.names)}", str(files[0]), "42804")
            self.schema = declared
            return
        schema = _reader(files[0]).schema
        # text that looks like nothing else stays text; NULL-only columns become text too
        self.schema = pa.schema([pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f
                                 for f in schema])

    def num_rows(self) -> int | None:
        return None

    def scan(self, columns: list[str]) -> Iterator[ScanBatch]:
        for path in self.files:
            size = path.stat().st_size
            reader = _reader(path, self.schema, columns or [self.schema.names[0]])
            first = True
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                except (OSError, pa.ArrowException) as e:
                    raise FileError(f"could not read CSV file {path}: {e}", str(path)) from e
                picked = batch.select(columns) if columns else pa.record_batch([], names=[])
                yield ScanBatch(picked, batch.num_rows, size if first else 0, str(path))
                first = False
