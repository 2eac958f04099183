"""Row groups decoded by the device kernels equal pyarrow's reading of them, across the
writer settings that change the bytes the kernels see.

Each file is written by pyarrow (or DuckDB) with one codec, dictionary or PLAIN encoding,
data pages v1 or v2, small pages (so one chunk is many pages, and page boundaries fall in
the middle of runs of NULLs and of dictionary indices) and row groups of 1, 7 or all rows.
Every row group is decoded by RowGroupDecoder and compared column by column, values (floats
bit for bit) and NULLs, with pyarrow's read_row_group. `host_columns` must stay empty for
every type and codec the device claims: a silent fallback to pyarrow would otherwise pass
unnoticed, since pyarrow's answer is the reference. Unsupported columns must be named, with
a reason, and still come back right.
"""

from __future__ import annotations

import datetime
import decimal
import random
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.io.parquet.device.pages import read_pages
from penstock.plan import types as T

SUPPORTED = ["i8", "i16", "i32", "i64", "f32", "f64", "day", "ts_ms", "ts_us", "ts_ns", "dec9", "dec18", "dec12",
             "s_short", "s_long", "s_empty", "s_uni", "s_many", "s_one", "s_huge", "null_i64", "null_s",
             "req_i32", "req_f64", "req_s", "req_dec"]


def matrix_table(rows: int, seed: int = 1) -> pa.Table:
    """One column per decoded type; NULLs in every nullable column (runs of them too, so
    definition levels use both RLE and bit-packed runs), edge values, and non-nullable
    (REQUIRED) columns, whose pages hold no definition levels at all."""
    rng = np.random.default_rng(seed)
    r = random.Random(seed)

    def nulls(values: list[Any], every: int = 6) -> list[Any]:
        # scattered NULLs, plus a run of 40 from row 100 on
        return [None if (k % every == 0 or 100 <= k < 140 or r.random() < 0.05) else v for k, v in enumerate(values)]

    def ints(lo: int, hi: int) -> list[int]:
        values = rng.integers(lo, hi, rows, endpoint=True).tolist()
        for k, edge in zip(range(1, rows, 97), [lo, hi, 0, -1, 1]):
            values[k] = edge
        return values

    floats = rng.normal(scale=1e6, size=rows)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, np.finfo(np.float64).max]
    for k, v in zip(range(3, rows, 89), specials * rows):
        floats[k] = v
    with np.errstate(over="ignore"):  # float64's max is inf as float32: one more special value
        floats32 = floats.astype(np.float32)
    words = ["", "a", "naïve", "日本語テキスト", "emoji 🙂🚀", "tab\tnew\nline", "x" * 40]
    schema = pa.schema([
        pa.field("i8", pa.int8()), pa.field("i16", pa.int16()), pa.field("i32", pa.int32()),
        pa.field("i64", pa.int64()), pa.field("f32", pa.float32()), pa.field("f64", pa.float64()),
        pa.field("day", pa.date32()), pa.field("ts_ms", pa.timestamp("ms")), pa.field("ts_us", pa.timestamp("us")),
        pa.field("ts_ns", pa.timestamp("ns")), pa.field("dec9", pa.decimal128(9, 2)),
        pa.field("dec18", pa.decimal128(18, 4)), pa.field("dec12", pa.decimal128(12, 0)),
        pa.field("s_short", pa.string()), pa.field("s_long", pa.string()), pa.field("s_empty", pa.string()),
        pa.field("s_uni", pa.string()), pa.field("s_many", pa.string()), pa.field("s_one", pa.string()),
        pa.field("s_huge", pa.string()), pa.field("null_i64", pa.int64()), pa.field("null_s", pa.string()),
        pa.field("req_i32", pa.int32(), nullable=False), pa.field("req_f64", pa.float64(), nullable=False),
        pa.field("req_s", pa.string(), nullable=False), pa.field("req_dec", pa.decimal128(18, 3), nullable=False),
    ])
    dec = decimal.Decimal
    data = {
        "i8": nulls(ints(-128, 127)), "i16": nulls(ints(-2**15, 2**15 - 1)), "i32": nulls(ints(-2**31, 2**31 - 1)),
        "i64": nulls(ints(-2**63, 2**63 - 1)),
        "f32": nulls(floats32.tolist()), "f64": nulls(floats.tolist()),
        "day": nulls([datetime.date(1970, 1, 1) + datetime.timedelta(days=v) for v in ints(-700000, 2000000)]),
        "ts_ms": nulls(ints(-2**52, 2**52)), "ts_us": nulls(ints(-2**60, 2**60)),
        "ts_ns": nulls(ints(-2**63 + 1, 2**63 - 1)),
        "dec9": nulls([dec(v).scaleb(-2) for v in ints(-10**9 + 1, 10**9 - 1)]),
        "dec18": nulls([dec(v).scaleb(-4) for v in ints(-10**18 + 1, 10**18 - 1)]),
        "dec12": nulls([dec(v) for v in ints(-10**12 + 1, 10**12 - 1)]),
        "s_short": nulls([f"k{v}" for v in rng.integers(0, 30, rows)]),
        "s_long": nulls(["L" * int(v) + str(k) for k, v in enumerate(rng.integers(50, 700, rows))]),
        "s_empty": nulls([""] * rows, every=3),
        "s_uni": nulls([words[k % len(words)] * (1 + k % 3) for k in range(rows)]),
        "s_many": nulls([f"distinct-{k}-{v}" for k, v in enumerate(rng.integers(0, 10**12, rows))]),
        "s_one": nulls(["only value"] * rows),
        "s_huge": nulls(["H" * 3000 + str(k) if k % 250 == 7 else "h" for k in range(rows)]),
        "null_i64": [None] * rows, "null_s": [None] * rows,
        "req_i32": ints(-2**31, 2**31 - 1), "req_f64": floats[::-1].tolist(),
        "req_s": [f"required {v}" for v in rng.integers(0, 500, rows)],
        "req_dec": [dec(v).scaleb(-3) for v in ints(-10**18 + 1, 10**18 - 1)],
    }
    for name in ("ts_ms", "ts_us", "ts_ns"):
        data[name] = pa.array(data[name], pa.int64()).cast(schema.field(name).type)
    table = pa.Table.from_pydict(data, schema=schema)
    assert table.column_names == SUPPORTED
    return table


def write(table: pa.Table, path: Path, **options: Any) -> Path:
    defaults: dict[str, Any] = dict(data_page_size=512, write_batch_size=64, dictionary_pagesize_limit=2048)
    pq.write_table(table, path, **{**defaults, **options})
    return path


def pages_per_chunk(path: Path, column: str) -> float:
    """Data pages of a column chunk (from its stored size, a lower bound is enough here)."""
    meta = pq.ParquetFile(path).metadata
    j = pq.ParquetFile(path).schema_arrow.get_field_index(column)
    return meta.row_group(0).column(j).total_compressed_size / 512


@pytest.fixture(scope="module")
def big_table() -> pa.Table:
    return matrix_table(20_000)


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("compression", ["none", "snappy", "zstd", "gzip"])
def test_one_big_row_group(tmp_path: Path, harness: Any, big_table: pa.Table, compression: str, dictionary: bool,
                           version: str) -> None:
    """Every codec the device decompresses, both encodings, both page versions: all
    columns decoded on the device, equal to pyarrow's."""
    path = write(big_table, tmp_path / "m.parquet", compression=compression, use_dictionary=dictionary,
                 data_page_version=version, row_group_size=100_000)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    assert pages_per_chunk(path, "i64") > 20
    decoder = harness.check(path)
    assert decoder.host_columns == {}
    if harness.backend.name == "cpu":
        assert decoder.decompression == ("none" if compression == "none" else "on the host")
    else:
        assert decoder.decompression in (("none",) if compression == "none" else ("nvCOMP on the GPU", "on the host"))


@pytest.mark.parametrize("rows_per_group, rows", [(7, 400), (1, 40)])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("compression", ["none", "snappy", "zstd"])
def test_small_row_groups(tmp_path: Path, cpu_harness: Any, compression: str, dictionary: bool, version: str,
                          rows_per_group: int, rows: int) -> None:
    """Row groups of 1 and 7 rows: every chunk a page or two, many of them all NULL."""
    table = matrix_table(rows, seed=rows_per_group)
    path = write(table, tmp_path / "small.parquet", compression=compression, use_dictionary=dictionary,
                 data_page_version=version, row_group_size=rows_per_group)
    assert pq.ParquetFile(path).metadata.num_row_groups == -(-rows // rows_per_group)
    decoder = cpu_harness.check(path)
    assert decoder.host_columns == {}


@pytest.mark.parametrize("dictionary", [True, False])
def test_lz4_is_read_right_whichever_reader_takes_it(tmp_path: Path, harness: Any, big_table: pa.Table,
                                                     dictionary: bool) -> None:
    """pyarrow's 'lz4' writes LZ4_RAW pages, but its metadata calls that codec 'LZ4', the
    name of the old Hadoop framing too. The decoder may decode the pages itself or leave
    them to pyarrow, naming the codec: either way the values are pyarrow's."""
    path = write(big_table.slice(0, 2000), tmp_path / "lz4.parquet", compression="lz4", use_dictionary=dictionary)
    codec = pq.ParquetFile(path).metadata.row_group(0).column(0).compression
    decoder = harness.check(path)
    if codec == "LZ4_RAW":
        assert decoder.host_columns == {}
    else:
        assert set(decoder.host_columns) == set(SUPPORTED)
        assert all("LZ4" in why for why in decoder.host_columns.values()), decoder.host_columns


def test_twenty_thousand_rows_default_pages(tmp_path: Path, harness: Any) -> None:
    """The writer's default page and dictionary sizes on ~20k rows (pages of 1 MiB, a
    dictionary that stays whole for most columns), in row groups that do not divide it."""
    table = matrix_table(20_000, seed=5)
    path = tmp_path / "twenty.parquet"
    pq.write_table(table, path, compression="snappy", row_group_size=6_000)
    assert pq.ParquetFile(path).metadata.num_row_groups == 4
    assert harness.check(path).host_columns == {}


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_pages_of_thousands_of_runs(tmp_path: Path, harness: Any, compression: str, version: str) -> None:
    """One large page per column whose levels and dictionary indices hold far more runs than
    the GPU's run tables (1024): values and NULLs change every 9 rows (RLE runs) or at random
    (bit-packed runs), so the block reads them window by window."""
    rows = 60_000
    rng = np.random.default_rng(5)
    step = np.arange(rows) // 9
    noisy = rng.integers(0, 5, rows)
    table = pa.table({
        "runs": pa.array(step % 3, pa.int64()),
        "null_runs": pa.array([None if b % 2 else int(v) for b, v in zip(step, noisy)], pa.int32()),
        "mixed": pa.array(np.where(step % 4 == 0, noisy, step % 7), pa.int64()),
        "text": pa.array([None if b % 5 == 0 else f"t{b % 3}" for b in step]),
        "req": pa.array(step % 6, pa.int32()),
    }, schema=pa.schema([pa.field("runs", pa.int64()), pa.field("null_runs", pa.int32()),
                         pa.field("mixed", pa.int64()), pa.field("text", pa.string()),
                         pa.field("req", pa.int32(), nullable=False)]))
    path = write(table, tmp_path / "runs.parquet", compression=compression, data_page_version=version,
                 data_page_size=64 << 20, write_batch_size=rows, dictionary_pagesize_limit=1 << 20)
    meta = pq.ParquetFile(path).metadata
    data = path.read_bytes()
    for c in range(meta.num_columns):
        chunk = meta.row_group(0).column(c)
        assert "RLE_DICTIONARY" in chunk.encodings or "PLAIN_DICTIONARY" in chunk.encodings
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        pages = read_pages(memoryview(data)[start:start + chunk.total_compressed_size], rows, chunk.compression)
        assert len(pages.data) <= 3, (chunk.path_in_schema, len(pages.data))  # pages of 20,000 rows at least
    assert harness.check(path).host_columns == {}


def test_a_dictionary_that_overflows_into_plain_pages(tmp_path: Path, cpu_harness: Any) -> None:
    """When the dictionary outgrows its limit the writer goes on in PLAIN pages within the
    same chunk: text then mixes dictionary entries and inline values, numbers likewise."""
    rows = 5000
    table = pa.table({
        "s": pa.array([None if k % 13 == 0 else f"value number {k}" for k in range(rows)]),
        "i": pa.array([None if k % 11 == 0 else k * 1_000_003 for k in range(rows)], pa.int64()),
        "d": pa.array([None if k % 7 == 0 else decimal.Decimal(k).scaleb(-2) for k in range(rows)],
                      pa.decimal128(9, 2)),
    })
    for version in ("1.0", "2.0"):
        path = write(table, tmp_path / f"overflow{version}.parquet", dictionary_pagesize_limit=1024,
                     data_page_version=version, compression="snappy")
        meta = pq.ParquetFile(path).metadata.row_group(0)
        for j in range(3):
            encodings = set(meta.column(j).encodings)
            assert "PLAIN" in encodings and encodings & {"RLE_DICTIONARY", "PLAIN_DICTIONARY"}, encodings
        assert cpu_harness.check(path).host_columns == {}


def test_pyarrow_decimals_stored_as_integers(tmp_path: Path, cpu_harness: Any) -> None:
    """Decimals of up to 18 digits stored as INT32 / INT64 (the kernels widen INT32 ones
    to 64 bits, sign included)."""
    table = matrix_table(3000, seed=9).select(["dec9", "dec18", "dec12", "req_dec", "i32"])
    path = write(table, tmp_path / "int_dec.parquet", store_decimal_as_integer=True, compression="zstd")
    schema = pq.ParquetFile(path).metadata.schema
    assert [schema.column(j).physical_type for j in range(4)] == ["INT32", "INT64", "INT64", "INT64"]
    assert cpu_harness.check(path).host_columns == {}


@pytest.mark.parametrize("compression", ["uncompressed", "snappy", "zstd"])
def test_a_duckdb_file(tmp_path: Path, harness: Any, compression: str) -> None:
    """DuckDB writes decimals as INT32 (up to 9 digits) and INT64 (up to 18), its own
    dictionary pages and its own page sizes."""
    path = tmp_path / "duck.parquet"
    duckdb.sql(f"""
        COPY (SELECT
                CASE WHEN i % 5 = 0 THEN NULL ELSE ((i * 7919) % 2000000 - 1000000)::DECIMAL(9, 2) END AS d9,
                CASE WHEN i % 6 = 0 THEN NULL
                     ELSE ((i * 1234567891) % 10000000000000 - 5000000000000)::DECIMAL(18, 4) END AS d18,
                ((i % 1999) - 999)::DECIMAL(4, 1) AS d4,
                CASE WHEN i % 4 = 0 THEN NULL ELSE 'v' || (i % 97)::VARCHAR END AS s,
                'row ' || i::VARCHAR AS u,
                i::BIGINT AS i, (i % 100)::TINYINT AS i8, (i % 30000)::SMALLINT AS i16,
                DATE '2020-01-01' + (i % 1000)::INTEGER AS day,
                TIMESTAMP '2020-01-01' + to_seconds(i) AS ts,
                CASE WHEN i % 3 = 0 THEN NULL ELSE i / 7 END AS f
              FROM range(20000) t(i))
        TO '{path}' (FORMAT parquet, COMPRESSION {compression}, ROW_GROUP_SIZE 6000)""")
    file = pq.ParquetFile(path)
    schema = file.metadata.schema
    physical = {schema.column(j).name: schema.column(j).physical_type for j in range(file.metadata.num_columns)}
    assert physical["d9"] == "INT32" and physical["d4"] == "INT32" and physical["d18"] == "INT64"
    assert file.metadata.num_row_groups >= 3
    decoder = harness.check(path)
    assert decoder.host_columns == {}


def test_many_pages_of_one_column_all_null_then_not(tmp_path: Path, cpu_harness: Any) -> None:
    """Pages that are all NULL (their values section empty) between pages that are not:
    each page's first output row must come from the counts of the pages before it."""
    rows = 4000
    values = [None if 500 <= k < 2500 else k for k in range(rows)]
    table = pa.table({"i": pa.array(values, pa.int64()), "s": pa.array([None if v is None else str(v) for v in values]),
                      "d": pa.array([None if v is None else decimal.Decimal(v) for v in values], pa.decimal128(10, 0))})
    for version in ("1.0", "2.0"):
        for compression in ("none", "zstd"):
            path = write(table, tmp_path / f"gaps{version}{compression}.parquet", data_page_version=version,
                         compression=compression)
            assert cpu_harness.check(path).host_columns == {}


def test_checksummed_pages_and_a_page_index(tmp_path: Path, cpu_harness: Any, big_table: pa.Table) -> None:
    """Page CRCs on every page (the decoder checks each one: none may be refused) and a page
    index (column and offset indexes live outside the chunks, which must not be read as
    pages), with and without compression. Runs of row groups with CRCs go to the host's
    page reader, which verifies them; without CRCs the kernels walk the pages themselves."""
    for compression in ("none", "zstd"):
        for crc in (True, False):
            path = write(big_table.slice(0, 3000), tmp_path / f"crc_{crc}_{compression}.parquet",
                         compression=compression, write_page_checksum=crc, write_page_index=True,
                         row_group_size=1000, data_page_version="2.0")
            assert pq.ParquetFile(path).metadata.row_group(0).column(0).has_offset_index
            assert cpu_harness.check(path, batched=not crc).host_columns == {}
            if crc:
                assert all(batch is None for _groups, batch in cpu_harness.decode_runs(path))


# ---- files of other writers ------------------------------------------------------------------
# Written by writers/make_files.py and committed (the GPU machine cannot install polars or
# fastparquet): columns in types the device decodes, with NULLs, in several row groups.
WRITERS = Path(__file__).parent / "writers"


@pytest.mark.parametrize("compression", ["zstd", "snappy", "lz4", "uncompressed"])
def test_files_written_by_polars(harness: Any, compression: str) -> None:
    """polars' own writer (not pyarrow's): dictionary and PLAIN pages, small pages and row
    groups, each codec it offers. Its lz4 is the deprecated Hadoop LZ4 codec, which pyarrow
    reads (every column named with that reason, and right)."""
    path = WRITERS / f"polars_{compression}.parquet"
    assert "polars" in (pq.ParquetFile(path).metadata.created_by or "").lower()
    columns = ["i64", "i32", "f64", "day", "s", "long"]
    expected = {c: "codec LZ4" for c in columns} if compression == "lz4" else {}
    assert harness.check(path).host_columns == expected


@pytest.mark.parametrize("compression", ["SNAPPY", "GZIP", "ZSTD", None])
def test_files_written_by_fastparquet(harness: Any, compression: str | None) -> None:
    """fastparquet's writer (from pandas): PLAIN and dictionary pages, nullable integers,
    a categorical column, several row groups."""
    path = WRITERS / f"fastparquet_{compression}.parquet"
    metadata = pq.ParquetFile(path).metadata
    assert "fastparquet" in (metadata.created_by or "").lower() and metadata.num_row_groups == 3
    decoder = harness.check(path, ["i64", "i32", "f64", "s", "long", "cat"])
    assert decoder.host_columns == {}


# ---- DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, BYTE_STREAM_SPLIT -----------------------

DELTA_INTS = ["i8", "i16", "i32", "i64", "day", "ts_ms", "ts_us", "ts_ns", "dec9", "dec18", "dec12", "null_i64",
              "req_i32", "req_dec"]
SPLIT = ["f32", "f64", "i32", "i64", "req_f64", "req_i32"]
DELTA_TEXT = ["s_short", "s_long", "s_empty", "s_uni", "s_many", "s_one", "s_huge", "null_s", "req_s"]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("compression", ["none", "snappy"])
@pytest.mark.parametrize("encoding, columns", [("DELTA_BINARY_PACKED", DELTA_INTS), ("BYTE_STREAM_SPLIT", SPLIT),
                                               ("DELTA_LENGTH_BYTE_ARRAY", DELTA_TEXT)])
def test_delta_and_split_encodings(tmp_path: Path, harness: Any, big_table: pa.Table, encoding: str,
                                   columns: list[str], compression: str, version: str) -> None:
    """Each encoding forced on every column it applies to (edge values, NULL runs, small
    pages, so miniblocks and pages end mid-run), row groups of 7 and of all rows: decoded on
    the device, equal to pyarrow's."""
    for group, rows in ((7, 700), (20_000, 20_000)):
        table = big_table.select(columns).slice(0, rows)
        path = write(table, tmp_path / f"{encoding}_{group}.parquet", compression=compression,
                     data_page_version=version, use_dictionary=False, row_group_size=group,
                     column_encoding={c: encoding for c in columns}, store_decimal_as_integer=True)
        meta = pq.ParquetFile(path).metadata
        assert encoding in meta.row_group(0).column(0).encodings
        assert harness.check(path).host_columns == {}


def test_delta_packed_extremes(tmp_path: Path, harness: Any) -> None:
    """Deltas of 64 bits (int64's extremes alternating), a single value, all NULL, runs of
    equal values (zero bit widths) and a count that ends mid-miniblock."""
    cases = {
        "swing": [(-2**63) if k % 2 else 2**63 - 1 for k in range(1000)],
        "one": [42] + [None] * 999,
        "none": [None] * 1000,
        "flat": [7] * 777 + [8] * 223,
        "ramp": list(range(-500, 500)),
    }
    table = pa.table({name: pa.array(values, pa.int64()) for name, values in cases.items()})
    for group in (1, 129, 1000):
        path = write(table, tmp_path / f"extremes_{group}.parquet", use_dictionary=False, row_group_size=group,
                     column_encoding="DELTA_BINARY_PACKED")
        assert harness.check(path).host_columns == {}


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_delta_byte_array_text(tmp_path: Path, harness: Any, big_table: pa.Table, version: str) -> None:
    """DELTA_BYTE_ARRAY text (each value a prefix of the one before plus a suffix, rebuilt on
    the device): every text column of the matrix, sorted keys with long shared prefixes, and
    row groups of 7 and of all rows."""
    text = big_table.select(DELTA_TEXT)
    keys = pa.table({"key": pa.array([f"customer#{k // 3:09d}/order#{k:07d}" for k in range(20_000)])})
    for group, rows in ((7, 700), (20_000, 20_000)):
        for name, table in (("matrix", text.slice(0, rows)), ("keys", keys.slice(0, rows))):
            path = write(table, tmp_path / f"dba_{name}_{group}.parquet", data_page_version=version,
                         use_dictionary=False, row_group_size=group, column_encoding="DELTA_BYTE_ARRAY")
            assert "DELTA_BYTE_ARRAY" in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
            assert harness.check(path).host_columns == {}


# ---- columns the device does not decode ------------------------------------------------------

def test_unsupported_columns_are_named_and_still_right(tmp_path: Path, harness: Any) -> None:
    """Unsigned integers and decimals of more than 18 digits are read by pyarrow (named with
    the reason), the other columns of the same row group by the device; together they equal
    pyarrow's reading."""
    rows = 3000
    table = pa.table({
        "u32": pa.array([None if k % 7 == 0 else 4_000_000_000 - k for k in range(rows)], pa.uint32()),
        "u8": pa.array([k % 256 for k in range(rows)], pa.uint8()),
        "wide": pa.array([None if k % 4 == 0 else decimal.Decimal(10**27 + k).scaleb(-2) for k in range(rows)],
                         pa.decimal128(30, 2)),
        "i": pa.array([None if k % 3 == 0 else k for k in range(rows)], pa.int64()),
        "s": pa.array([f"s{k % 10}" for k in range(rows)]),
    })
    path = write(table, tmp_path / "unsupported.parquet", compression="snappy", row_group_size=1000)
    decoder = harness.check(path)
    reasons = decoder.host_columns
    assert set(reasons) == {"u32", "u8", "wide"}, reasons
    assert "uint32" in reasons["u32"] and "uint8" in reasons["u8"]
    assert "decimal128(30, 2)" in reasons["wide"]


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_booleans(tmp_path: Path, harness: Any, compression: str, version: str) -> None:
    """BOOLEAN columns (bit-packed PLAIN pages; RLE pages in v2, as pyarrow writes them when
    asked), nullable and required, runs and scattered values, into Arrow's bitmaps."""
    rows = 5000
    table = pa.table({"b": pa.array([None if k % 5 == 0 else (k * 7) % 3 == 0 for k in range(rows)]),
                      "runs": pa.array([k // 700 % 2 == 0 for k in range(rows)]),
                      "req": pa.array([k % 3 != 1 for k in range(rows)], pa.bool_()),
                      "none": pa.array([None] * rows, pa.bool_())},
                     schema=pa.schema([pa.field("b", pa.bool_()), pa.field("runs", pa.bool_()),
                                       pa.field("req", pa.bool_(), nullable=False), pa.field("none", pa.bool_())]))
    for encoding in ("PLAIN", "RLE"):
        if encoding == "RLE" and version == "1.0":
            continue
        path = write(table, tmp_path / f"bool_{encoding}.parquet", compression=compression, data_page_version=version,
                     use_dictionary=False, column_encoding=encoding, row_group_size=1700)
        assert encoding in pq.ParquetFile(path).metadata.row_group(0).column(0).encodings
        assert harness.check(path).host_columns == {}


def test_int96_timestamps(tmp_path: Path, harness: Any) -> None:
    """INT96 timestamps (Impala's: nanoseconds of the day and a Julian day) as nanoseconds,
    PLAIN and dictionary-encoded, before and after 1970, with NULLs."""
    values = [None, 0, 1, -1, 86_399_999_999_999, -86_400_000_000_001, 2**40, -2**50, 1_700_000_000_123_456_789]
    table = pa.table({"t": pa.array(values * 300, pa.int64()).cast(pa.timestamp("ns")),
                      "i": pa.array(list(range(len(values) * 300)), pa.int64())})
    for dictionary in (False, True):
        path = tmp_path / f"int96_{dictionary}.parquet"
        pq.write_table(table, path, use_deprecated_int96_timestamps=True, use_dictionary=dictionary,
                       row_group_size=1000, data_page_size=1024)
        assert pq.ParquetFile(path).metadata.schema.column(0).physical_type == "INT96"
        assert harness.check(path).host_columns == {}


def test_nested_columns_are_named_nested(tmp_path: Path, cpu_harness: Any) -> None:
    """A list or struct column has no leaf of its own name: the decoder must say so rather
    than look a leaf up by the wrong name. (The engine has no type for them, so they are
    only named here, not decoded.)"""
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"l": pa.array([[1, 2], None, [], [3]], pa.list_(pa.int64())),
                             "st": pa.array([{"a": 1}, None, {"a": 3}, {"a": None}]),
                             "i": pa.array([1, 2, None, 4], pa.int64())}), path)
    file = pq.ParquetFile(path)
    from penstock.io.parquet.device.decoder import RowGroupDecoder

    decoder = RowGroupDecoder(cpu_harness.backend, path, file, ["l", "st", "i"], [T.INT64, T.INT64, T.INT64])
    assert decoder.host_columns == {"l": "nested", "st": "nested"}
    assert cpu_harness.check(path, ["i"]).host_columns == {}


@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_fixed_len_byte_arrays_as_bytea(tmp_path: Path, harness: Any, dictionary: bool, version: str) -> None:
    """FIXED_LEN_BYTE_ARRAY read as fixed_size_binary (signatures, hashes): the bytes as
    stored, 256 and 7 bytes a value, nullable and required, PLAIN or dictionary-encoded, on
    the device (no column left to pyarrow)."""
    rows = 3000
    rng = np.random.default_rng(4)
    wide = rng.integers(0, 256, (rows, 256), dtype=np.uint8)
    wide[::3] = wide[0]  # repeats: the dictionary has something to share
    odd = rng.integers(0, 4, (rows, 7), dtype=np.uint8)  # few distinct values
    valid = np.ones(rows, bool)
    valid[::11] = False
    valid[500:560] = False
    table = pa.table({
        "sig": pa.FixedSizeBinaryArray.from_buffers(pa.binary(256), rows, [
            pa.py_buffer(np.packbits(valid, bitorder="little")), pa.py_buffer(wide.tobytes())]),
        "tag": pa.FixedSizeBinaryArray.from_buffers(pa.binary(7), rows, [None, pa.py_buffer(odd.tobytes())]),
    }, schema=pa.schema([pa.field("sig", pa.binary(256)), pa.field("tag", pa.binary(7), nullable=False)]))
    path = write(table, tmp_path / "flba.parquet", use_dictionary=dictionary, data_page_version=version,
                 compression="snappy", row_group_size=1000, data_page_size=4096)
    assert harness.check(path).host_columns == {}


@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_fixed_columns_decoded_in_one_launch(tmp_path: Path, harness: Any, big_table: pa.Table,
                                             monkeypatch: pytest.MonkeyPatch, dictionary: bool, version: str) -> None:
    """PENSTOCK_PARQUET_FIXED_TOGETHER: a run's fixed-width columns in one launch
    (parquet_fixed_columns), the text columns' pages skipped there and decoded as before;
    every column still equals pyarrow's, in runs of several row groups and of one."""
    import penstock.io.parquet.device.batch_decoder as module

    monkeypatch.setattr(module, "FIXED_TOGETHER", True)
    path = write(big_table.slice(0, 6000), tmp_path / "together.parquet", compression="snappy",
                 use_dictionary=dictionary, data_page_version=version, row_group_size=1500)
    assert harness.check(path).host_columns == {}
    flba = tmp_path / "flba.parquet"  # bytea and booleans (their own serial kernel) beside
    pq.write_table(pa.table({"sig": pa.array([bytes([k % 251]) * 20 if k % 7 else None for k in range(3000)],
                                             pa.binary(20)),
                             "flag": pa.array([None if k % 5 == 0 else k % 3 == 0 for k in range(3000)]),
                             "n": pa.array(np.arange(3000), pa.int64())}),
                   flba, row_group_size=700, data_page_size=1024, use_dictionary=dictionary,
                   data_page_version=version)
    assert harness.check(flba).host_columns == {}


@pytest.mark.parametrize("dictionary", [False, True])
def test_decimals_of_every_stored_width(tmp_path: Path, cpu_harness: Any, dictionary: bool) -> None:
    """FIXED_LEN_BYTE_ARRAY decimals of 1 to 8 bytes (precision 1 to 18), with each width's
    extremes and negative values, PLAIN and dictionary-encoded: the host reads the
    big-endian bytes as one word where 8 bytes lie before the page's (or dictionary's) end,
    and byte by byte for the last values, and both must give pyarrow's values."""
    rng = random.Random(5)
    columns = {}
    for precision in (2, 4, 6, 9, 11, 14, 16, 18):
        top = 10 ** precision - 1
        values = [rng.randint(-top, top) for _ in range(600)] + [top, -top, 0, -1, 1]
        if dictionary:
            values = [values[k % 40] for k in range(len(values))] + [top, -top]
        columns[f"d{precision}"] = pa.array([decimal.Decimal(v).scaleb(-1) for v in values],
                                            pa.decimal128(precision, 1))
    table = pa.table(columns)
    path = write(table, tmp_path / "widths.parquet", use_dictionary=dictionary, compression="snappy",
                 data_page_size=512)
    meta = pq.ParquetFile(path).metadata
    assert {meta.row_group(0).column(j).physical_type for j in range(meta.num_columns)} == {"FIXED_LEN_BYTE_ARRAY"}
    assert cpu_harness.check(path).host_columns == {}
