"""Writes the Parquet files of other writers that test_decode_matrix.py decodes, into this
folder. They are committed, so the tests run where these writers are not installed (the GPU
machine has no package index). Regenerate after changing the frame:

    pip install polars fastparquet pandas
    python tests/io/parquet/device/writers/make_files.py

Each file holds the same columns, in types the device decodes, with NULLs, in several row
groups and (polars) small pages, so page boundaries fall inside runs.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

ROWS = 3000
HERE = Path(__file__).parent
POLARS_CODECS = ["zstd", "snappy", "lz4", "uncompressed"]
FASTPARQUET_CODECS = ["SNAPPY", "GZIP", "ZSTD", None]


def frame(rows: int) -> dict[str, list[Any]]:
    day0 = datetime.date(2020, 1, 1)
    return {
        "i64": [None if k % 7 == 0 else k * 1_000_003 - 2**40 for k in range(rows)],
        "i32": [None if k % 11 == 0 else (k * 7919) % 100_000 - 50_000 for k in range(rows)],
        "f64": [None if k % 13 == 0 else k / 7 for k in range(rows)],
        "day": [None if k % 17 == 0 else day0 + datetime.timedelta(days=k % 3000) for k in range(rows)],
        "s": [None if k % 5 == 0 else f"value {k % 97}" for k in range(rows)],
        "long": [None if k % 3 == 0 else f"distinct text {k} " * (1 + k % 4) for k in range(rows)],
    }


def write_polars(compression: str) -> Path:
    import polars as pl

    schema = {"i64": pl.Int64, "i32": pl.Int32, "f64": pl.Float64, "day": pl.Date, "s": pl.String, "long": pl.String}
    path = HERE / f"polars_{compression}.parquet"
    pl.DataFrame(frame(ROWS), schema=schema).write_parquet(path, compression=compression, row_group_size=1000,
                                                          data_page_size=2048, use_pyarrow=False)
    return path


def write_fastparquet(compression: str | None) -> Path:
    import fastparquet
    import pandas as pd

    data = frame(ROWS)
    table = pd.DataFrame({"i64": pd.array(data["i64"], dtype="Int64"), "i32": pd.array(data["i32"], dtype="Int32"),
                          "f64": pd.array(data["f64"], dtype="Float64"), "s": data["s"], "long": data["long"],
                          "cat": pd.Categorical([f"c{k % 9}" for k in range(ROWS)])})
    path = HERE / f"fastparquet_{compression}.parquet"
    fastparquet.write(str(path), table, compression=compression, row_group_offsets=1000, write_index=False)
    return path


if __name__ == "__main__":
    for codec in POLARS_CODECS:
        print(write_polars(codec))
    for codec in FASTPARQUET_CODECS:
        print(write_fastparquet(codec))
