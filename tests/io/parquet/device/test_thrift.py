"""Page headers (io/parquet/device/thrift.py) and the page walk of a column chunk (pages.py).

pyarrow does not expose page headers, so the device path parses them itself; a header read
one byte off, or a lying header accepted, puts the kernels on the wrong bytes. The headers
of real files (pyarrow's and DuckDB's) are walked page by page and checked against what the
footer says of each chunk (its value count, its stored and decoded byte totals, its first
data page); hand-made headers check that each kind of damage is refused with ValueError,
which the decoder turns into FileError naming file, row group and column.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.io.parquet.device.pages import ENCODING_NAMES, read_pages
from penstock.io.parquet.device.thrift import DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, INDEX_PAGE, PageHeader, \
    read_page_header

# ---- a small Thrift compact-protocol writer, for hand-made headers ---------------------------

I32, BINARY, LIST, STRUCT, TRUE, FALSE, DOUBLE, MAP, I64 = 5, 8, 9, 12, 1, 2, 7, 11, 6


def varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def zigzag(v: int) -> bytes:
    return varint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


def struct(*fields: tuple[int, int, Any]) -> bytes:
    """A compact-protocol struct of (field id, type, value) fields: value is an int for
    I32/I64, a bool's type carries its value, bytes are already encoded (BINARY: the raw
    bytes; STRUCT/LIST/MAP/DOUBLE: the encoded body)."""
    out, last = bytearray(), 0
    for fid, kind, value in fields:
        delta = fid - last
        out += bytes([(delta << 4) | kind]) if 0 < delta <= 15 else bytes([kind]) + zigzag(fid)
        if kind in (I32, I64):
            out += zigzag(value)
        elif kind == BINARY:
            out += varint(len(value)) + value
        elif kind in (STRUCT, LIST, MAP, DOUBLE):
            out += value
        last = fid
    return bytes(out + b"\x00")


def data_page(num_values: int, size: int, encoding: int = 0, crc: int | None = None,
              compressed: int | None = None) -> bytes:
    fields = [(1, I32, DATA_PAGE), (2, I32, size), (3, I32, size if compressed is None else compressed)]
    if crc is not None:
        fields.append((4, I32, crc))
    fields.append((5, STRUCT, struct((1, I32, num_values), (2, I32, encoding), (3, I32, 3), (4, I32, 3))))
    return struct(*fields)


def dictionary_page(num_values: int, size: int, encoding: int = 0) -> bytes:
    return struct((1, I32, DICTIONARY_PAGE), (2, I32, size), (3, I32, size),
                  (7, STRUCT, struct((1, I32, num_values), (2, I32, encoding))))


def v2_page(num_values: int, size: int, def_len: int, rep_len: int = 0, nulls: int = 0,
            compressed: bool = True) -> bytes:
    return struct((1, I32, DATA_PAGE_V2), (2, I32, size), (3, I32, size),
                  (8, STRUCT, struct((1, I32, num_values), (2, I32, nulls), (3, I32, num_values), (4, I32, 0),
                                     (5, I32, def_len), (6, I32, rep_len), (7, TRUE if compressed else FALSE, None))))


def parse(data: bytes, at: int = 0, end: int | None = None) -> PageHeader:
    return read_page_header(memoryview(data), at, len(data) if end is None else end)


# ---- headers of real files -------------------------------------------------------------------

def walk(raw: bytes, start: int, length: int, values: int) -> list[tuple[int, PageHeader]]:
    """Each page's (offset in the file, header), walked from a chunk's first page the way
    pages.read_pages does: header, then its compressed_size bytes, then the next header."""
    view, at, end, seen, out = memoryview(raw), start, start + length, 0, []
    while seen < values:
        header = read_page_header(view, at, end)
        out.append((at, header))
        if header.type in (DATA_PAGE, DATA_PAGE_V2):
            seen += header.num_values
        at += header.header_length + header.compressed_size
    assert at == end, f"the pages end at byte {at}; the chunk at {end}"
    return out


def sample(rows: int = 3000) -> pa.Table:
    return pa.table({
        "i": pa.array([None if k % 9 == 0 else k * 7919 % 1000 for k in range(rows)], pa.int64()),
        "s": pa.array([None if k % 5 == 0 else f"text-{k % 40}" for k in range(rows)]),
        "u": pa.array([f"unique-{k}" for k in range(rows)]),
        "f": pa.array([k / 3 for k in range(rows)], pa.float32()),
    }, schema=pa.schema([pa.field("i", pa.int64()), pa.field("s", pa.string()), pa.field("u", pa.string()),
                         pa.field("f", pa.float32(), nullable=False)]))


def check_chunks(path: Path, checksums: bool) -> int:
    """Walk every chunk of the file, checking each header against the footer; the number
    of pages seen."""
    raw = path.read_bytes()
    meta = pq.ParquetFile(path).metadata
    pages = 0
    for g in range(meta.num_row_groups):
        for j in range(meta.num_columns):
            chunk = meta.row_group(g).column(j)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
            walked = walk(raw, start, chunk.total_compressed_size, chunk.num_values)
            pages += len(walked)
            headers = [h for _at, h in walked]
            where = f"row group {g} column {j}"
            assert (headers[0].type == DICTIONARY_PAGE) == chunk.has_dictionary_page, where
            first_data = next(at for at, h in walked if h.type in (DATA_PAGE, DATA_PAGE_V2))
            assert first_data == chunk.data_page_offset, where
            data = [h for h in headers if h.type in (DATA_PAGE, DATA_PAGE_V2)]
            assert sum(h.num_values for h in data) == chunk.num_values, where
            # the footer's totals count every header's bytes: header_length must be exact
            assert sum(h.header_length + h.compressed_size for h in headers) == chunk.total_compressed_size, where
            assert sum(h.header_length + h.uncompressed_size for h in headers) == chunk.total_uncompressed_size, where
            assert {ENCODING_NAMES[h.encoding] for h in data} <= set(chunk.encodings), where
            if chunk.compression == "UNCOMPRESSED":
                assert all(h.compressed_size == h.uncompressed_size for h in headers), where
            for at, h in walked:
                body = raw[at + h.header_length:at + h.header_length + h.compressed_size]
                if checksums:
                    assert h.crc is not None and h.crc & 0xFFFFFFFF == zlib.crc32(body), where
                else:
                    assert h.crc is None, where
            v2 = [h for h in data if h.type == DATA_PAGE_V2]
            if v2:
                assert len(v2) == len(data), where
                assert all(h.repetition_levels_length == 0 for h in v2), where
                if chunk.statistics is not None and chunk.statistics.has_null_count:
                    assert sum(h.num_nulls for h in v2) == chunk.statistics.null_count, where
                if meta.schema.column(j).max_definition_level == 0:
                    assert all(h.definition_levels_length == 0 for h in v2), where
                else:
                    assert all(h.definition_levels_length > 0 for h in v2), where
            else:
                assert all(h.definition_level_encoding == 3 for h in data), where  # RLE
    return pages


@pytest.mark.parametrize("compression", ["none", "snappy", "zstd", "gzip"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_every_header_of_a_pyarrow_file_agrees_with_the_footer(tmp_path: Path, compression: str, version: str,
                                                              dictionary: bool) -> None:
    """Small pages (so chunks hold many), a dictionary that overflows into PLAIN pages,
    page CRCs on half the files: every header's sizes, counts and CRC line up."""
    path = tmp_path / "f.parquet"
    checksums = dictionary  # alternate, to see both layouts
    pq.write_table(sample(), path, compression=compression, data_page_version=version, use_dictionary=dictionary,
                   data_page_size=512, write_batch_size=100, dictionary_pagesize_limit=256, row_group_size=1200,
                   write_page_checksum=checksums)
    assert check_chunks(path, checksums) > 4 * 3 * 4  # several pages per chunk


def test_headers_of_a_duckdb_file(tmp_path: Path) -> None:
    """DuckDB writes its own headers (statistics inside them, its own field order)."""
    path = tmp_path / "duck.parquet"
    duckdb.sql(f"""COPY (SELECT i::BIGINT AS i, CASE WHEN i % 3 = 0 THEN NULL ELSE 'v' || (i % 50)::VARCHAR END AS s,
                           (i % 1000)::DECIMAL(9, 2) AS d
                    FROM range(5000) t(i)) TO '{path}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)""")
    assert check_chunks(path, checksums=False) >= 9


def test_every_truncation_of_a_real_header_is_refused(tmp_path: Path) -> None:
    """A header cut anywhere (the chunk ending early) runs past its end: ValueError, never
    a header read from the bytes that follow."""
    path = tmp_path / "f.parquet"
    pq.write_table(sample(200), path, data_page_version="2.0", write_page_checksum=True)
    raw = path.read_bytes()
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    header = read_page_header(memoryview(raw), start, len(raw))
    assert header.header_length > 10
    for cut in range(header.header_length):
        with pytest.raises(ValueError):
            read_page_header(memoryview(raw), start, start + cut)
    assert read_page_header(memoryview(raw), start, start + header.header_length) == header


# ---- hand-made headers -----------------------------------------------------------------------

def test_a_hand_made_header_reads_back() -> None:
    """The writer above is right (so the refusals below are refusals of the damage alone)."""
    h = parse(data_page(100, 800, encoding=8, crc=-12345))
    assert (h.type, h.uncompressed_size, h.compressed_size, h.num_values, h.encoding) == (DATA_PAGE, 800, 800, 100, 8)
    assert h.crc == -12345 and h.definition_level_encoding == 3
    assert h.header_length == len(data_page(100, 800, 8, -12345))
    v2 = parse(v2_page(50, 300, def_len=12, nulls=7, compressed=False))
    assert (v2.type, v2.num_values, v2.num_nulls, v2.definition_levels_length, v2.is_compressed) == \
        (DATA_PAGE_V2, 50, 7, 12, False)
    assert parse(v2_page(50, 300, def_len=12)).is_compressed
    d = parse(dictionary_page(9, 72, encoding=2))
    assert (d.type, d.num_values, d.encoding) == (DICTIONARY_PAGE, 9, 2)


def test_unknown_fields_are_skipped_and_the_header_ends_where_it_ends() -> None:
    """Thrift requires unknown fields be skipped whole: binaries, doubles, lists, maps and
    nested structs (statistics) of every size, and long-form field ids."""
    stats = struct((1, BINARY, b"\x00" * 20), (2, BINARY, b"max"), (3, I64, 5), (7, BINARY, b""))
    big_list = bytes([0xF0 | I32]) + varint(20) + b"".join(zigzag(k) for k in range(20))
    a_map = varint(2) + bytes([(I32 << 4) | BINARY]) + zigzag(1) + varint(1) + b"a" + zigzag(2) + varint(0)
    header = struct((1, I32, DATA_PAGE), (2, I32, 64), (3, I32, 64),
                    (5, STRUCT, struct((1, I32, 8), (2, I32, 0), (3, I32, 3), (4, I32, 3), (5, STRUCT, stats))),
                    (6, DOUBLE, b"\x01" * 8), (9, LIST, bytes([(3 << 4) | TRUE, 1, 0, 1])),
                    (10, LIST, big_list), (11, MAP, a_map), (40, BINARY, b"x" * 300), (41, MAP, varint(0)))
    padded = b"\xAA" * 5 + header + b"\xBB" * 7  # header in the middle of a chunk
    h = parse(padded, at=5)
    assert (h.type, h.compressed_size, h.num_values, h.header_length) == (DATA_PAGE, 64, 8, len(header))


@pytest.mark.parametrize("damaged, why", [
    (struct((1, I32, DATA_PAGE), (2, I32, -5), (3, I32, 10),
            (5, STRUCT, struct((1, I32, 1), (2, I32, 0)))), "negative uncompressed size"),
    (struct((1, I32, DATA_PAGE), (2, I32, 10), (3, I32, -1),
            (5, STRUCT, struct((1, I32, 1), (2, I32, 0)))), "negative compressed size"),
    (data_page(-3, 10), "negative value count"),
    (dictionary_page(-1, 10), "negative dictionary count"),
    (v2_page(10, 40, def_len=41), "v2 levels longer than the page"),
    (v2_page(10, 40, def_len=30, rep_len=11), "v2 levels (both kinds) longer than the page"),
    (v2_page(10, 40, def_len=-2), "v2 negative level length"),
    (v2_page(10, 40, def_len=4, rep_len=-1), "v2 negative repetition length"),
    (v2_page(10, 40, def_len=4, nulls=-1), "v2 negative NULL count"),
    (struct((2, I32, 10), (3, I32, 10)), "no page type"),
    (struct((1, I32, DATA_PAGE), (3, I32, 10)), "no uncompressed size"),
    (struct((1, I32, DATA_PAGE), (2, BINARY, b"xx"), (3, I32, 10)), "a size that is no integer"),
    (struct((1, I32, DATA_PAGE), (2, I32, 10), (3, I32, 10)), "a data page without its data page header"),
    (struct((1, I32, DATA_PAGE_V2), (2, I32, 10), (3, I32, 10),
            (5, STRUCT, struct((1, I32, 1)))), "a v2 page with a v1 data page header"),
    (struct((1, I32, DICTIONARY_PAGE), (2, I32, 10), (3, I32, 10), (7, I32, 4)), "a dictionary header no struct"),
    (bytes([0x15, 0x00, 0x1D]), "unknown Thrift type 13"),
    (bytes([0x15, 0x00, 0x1E]), "unknown Thrift type 14"),
    (bytes([0x15]) + b"\xFF" * 12, "a varint that never ends"),
    (bytes([0x15, 0x00, 0x15, 0x14, 0x15, 0x14, 0x98]) + varint(1000) + b"abc", "a binary past the end"),
    (bytes([0x15, 0x00]) + bytes([0x1C]) * 40 + b"\x00" * 41, "structs nested 40 deep"),
    (bytes([0x15, 0x00, 0x15, 0x14, 0x15, 0x14, 0x99, 0xF5]) + varint(10**6), "a list longer than the header"),
])
def test_damaged_headers_are_refused(damaged: bytes, why: str) -> None:
    """Each of these is refused with ValueError (not IndexError, not a header of nonsense
    sizes that the kernels would then trust)."""
    with pytest.raises(ValueError):
        parse(damaged)


def test_a_header_must_end_inside_its_chunk() -> None:
    """`end` is the chunk's end: a header that would complete only past it is refused, even
    when the buffer holds the rest (the next chunk's bytes are not this chunk's header)."""
    header = data_page(10, 80)
    buffer = header + b"\x00" * 100
    assert parse(buffer, end=len(header)).num_values == 10
    with pytest.raises(ValueError):
        parse(buffer, end=len(header) - 1)


# ---- the page walk of a chunk (pages.read_pages) ---------------------------------------------

def chunk(*pages: tuple[bytes, int]) -> memoryview:
    """Pages of (header, body length) laid out as in a file, bodies of zero bytes."""
    return memoryview(b"".join(h + b"\x00" * n for h, n in pages))


def test_read_pages_lays_out_a_chunk() -> None:
    """A dictionary page, an index page (skipped), then data pages: offsets of each body."""
    d = dictionary_page(4, 32)
    index = struct((1, I32, INDEX_PAGE), (2, I32, 6), (3, I32, 6))
    p1, p2 = data_page(5, 20, encoding=8), data_page(3, 12, encoding=0)
    pages = read_pages(chunk((d, 32), (index, 6), (p1, 20), (p2, 12)), 8)
    assert pages.dictionary is not None and pages.dictionary.body == len(d)
    assert [p.header.num_values for p in pages.data] == [5, 3]
    assert pages.data[0].body == len(d) + 32 + len(index) + 6 + len(p1)
    assert pages.data[1].body == pages.data[0].body + 20 + len(p2)


@pytest.mark.parametrize("layout, values, error, text", [
    ([(data_page(5, 20), 20), (dictionary_page(2, 16), 16), (data_page(5, 20), 20)], 10, ValueError,
     "dictionary page at byte"),
    ([(dictionary_page(2, 16), 16), (dictionary_page(2, 16), 16), (data_page(5, 20), 20)], 5, ValueError,
     "dictionary page at byte"),
    ([(data_page(5, 20, encoding=8), 20)], 5, ValueError, "without a dictionary"),
    ([(data_page(5, 20, compressed=400), 20)], 5, ValueError, "claims 400 bytes"),
    ([(data_page(5, 20), 20)], 9, ValueError, "ends after 5 of its 9"),
    ([(data_page(5, 20), 20), (data_page(5, 20), 20)], 8, ValueError, "pages hold 10 values"),
    ([(struct((1, I32, 7), (2, I32, 4), (3, I32, 4)), 4)], 1, ValueError, "unknown page type 7"),
    ([(dictionary_page(2, 16, encoding=5), 16), (data_page(5, 20, 8), 20)], 5, ValueError, "dictionary page in"),
    ([(data_page(5, 20, encoding=5), 20)], 5, NotImplementedError, "DELTA_BINARY_PACKED"),
    ([(data_page(5, 20, encoding=9), 20)], 5, NotImplementedError, "BYTE_STREAM_SPLIT"),
])
def test_read_pages_refuses_chunks_that_lie(layout: list[tuple[bytes, int]], values: int, error: type,
                                            text: str) -> None:
    """A lying chunk is ValueError (corrupt: FileError); an encoding the kernels lack is
    NotImplementedError (pyarrow reads that column instead)."""
    with pytest.raises(error, match=text):
        read_pages(chunk(*layout), values)


def test_read_pages_checks_crcs() -> None:
    body = bytes(range(20))
    good = data_page(5, 20, crc=zlib.crc32(body) - (1 << 32 if zlib.crc32(body) >= 1 << 31 else 0))
    assert len(read_pages(memoryview(good + body), 5).data) == 1
    bad = bytearray(body)
    bad[7] ^= 0x01
    with pytest.raises(ValueError, match="CRC"):
        read_pages(memoryview(good + bytes(bad)), 5)
    assert len(read_pages(memoryview(good + bytes(bad)), 5, verify_crc=False).data) == 1
