"""Damaged Parquet files on the device decode path: FileError naming the file, the row
group and the column, with SQLSTATE XX001; never a crash, a read outside the page, or a
wrong answer where the format can tell the bytes are wrong.

Files are damaged at known places (a page's definition levels, its dictionary indices, a
PLAIN value's length, a header's size, the snappy preamble of a page, the file's end) by
walking the chunk's page headers, so each test knows what it broke. Where the format cannot
tell (a flipped bit inside a PLAIN integer of an uncompressed page without CRC), the test
checks the damage stays where it was made. Files with page CRCs must refuse any damaged
page. Both RowGroupDecoder and the engine end to end (parquet_decode='device') are used; a
connection must keep answering after a damaged file failed.

Damage that makes the kernels write or read outside their buffers is run in a child
process, so that the bug fails its test and not the whole test run.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock
from penstock.errors import FileError
from penstock.io.parquet.device.thrift import DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, PageHeader, read_page_header

ROWS, GROUP = 3000, 1000
# text columns first: see test_damage_in_a_number_column_is_not_blamed_on_a_text_column_after_it
COLUMNS = ["p", "s", "k", "a", "d"]
QUERY = "SELECT count(*) AS n, count(p) AS np, min(s) AS ms, sum(k) AS sk, sum(a) AS sa, max(d) AS md FROM t"


def table() -> pa.Table:
    """p: PLAIN text; s: dictionary text; k: dictionary int64; a: PLAIN int64; d: double.
    The first 200 rows of every row group are never NULL, so each chunk's definition
    levels start with one RLE run of 1s (the tests damage that run)."""
    def null(k: int) -> bool:
        return k % GROUP >= 200 and k % 10 == 9
    return pa.table({
        "p": pa.array([None if null(k) else f"plain value {k}" for k in range(ROWS)]),
        "s": pa.array([None if null(k) else f"word{k * 7 % 40}" for k in range(ROWS)]),
        "k": pa.array([None if null(k) else k * 13 % 40 for k in range(ROWS)], pa.int64()),
        "a": pa.array([None if null(k) else k * 1000 + 7 for k in range(ROWS)], pa.int64()),
        "d": pa.array([None if null(k) else k / 8 for k in range(ROWS)], pa.float64()),
    })


def write(path: Path, compression: str = "none", version: str = "1.0", checksums: bool = False,
          data_page_size: int | None = None) -> Path:
    options: dict[str, Any] = {"data_page_size": data_page_size} if data_page_size else {}
    pq.write_table(table(), path, row_group_size=GROUP, compression=compression, data_page_version=version,
                   use_dictionary=["s", "k"], write_page_checksum=checksums, **options)
    return path


def pages_any(path: Path, group: int, j: int) -> list[tuple[int, PageHeader]]:
    """(file offset of the page's header, header) of each page of column chunk `j` of a
    row group, walked as pages.read_pages walks it."""
    raw = path.read_bytes()
    chunk = pq.ParquetFile(path).metadata.row_group(group).column(j)
    at = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    end, seen, out = at + chunk.total_compressed_size, 0, []
    while seen < chunk.num_values:
        header = read_page_header(memoryview(raw), at, end)
        out.append((at, header))
        seen += header.num_values if header.type in (DATA_PAGE, DATA_PAGE_V2) else 0
        at += header.header_length + header.compressed_size
    return out


def pages(path: Path, group: int, column: str) -> list[tuple[int, PageHeader]]:
    """pages_any for a column of table() by name."""
    return pages_any(path, group, COLUMNS.index(column))


def first_data_page(path: Path, group: int, column: str) -> tuple[int, PageHeader]:
    """(file offset of the page's body, header) of the chunk's first data page."""
    at, header = next((at, h) for at, h in pages(path, group, column) if h.type != DICTIONARY_PAGE)
    return at + header.header_length, header


def uleb(data: bytes | bytearray, at: int) -> tuple[int, int]:
    """(value, offset after it) of the ULEB128 varint at `at`."""
    value, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7


def varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def damage(source: Path, target: Path, edits: dict[int, bytes]) -> Path:
    """A copy of `source` with bytes overwritten at the given file offsets."""
    data = bytearray(source.read_bytes())
    for at, new in edits.items():
        data[at:at + len(new)] = new
    target.write_bytes(bytes(data))
    return target


def values_start(raw: bytes, body: int, header: PageHeader) -> int:
    """Where an uncompressed page's values begin: after a v1 page's length-prefixed levels,
    or a v2 page's level sections."""
    if header.type == DATA_PAGE_V2:
        return body + header.definition_levels_length + header.repetition_levels_length
    return body + 4 + int.from_bytes(raw[body:body + 4], "little")


def level_run_value(raw: bytes, body: int, header: PageHeader) -> int:
    """The file offset of the value byte of the page's first definition-level run, which
    must be an RLE run of 1s (checked: the damage below relies on it)."""
    at = body + header.repetition_levels_length if header.type == DATA_PAGE_V2 else body + 4
    run, value_at = uleb(raw, at)
    assert run & 1 == 0 and run >> 1 >= 100 and raw[value_at] == 1, "expected the levels to open with an RLE run"
    return value_at


def level_runs(raw: bytes, start: int, end: int) -> list[tuple[int, bool, int]]:
    """(file offset of the run header, bit-packed?, values) of each run of a definition-level
    section (bit width 1) from `start` to `end`."""
    out, at = [], start
    while at < end:
        header, after = uleb(raw, at)
        packed = bool(header & 1)
        out.append((at, packed, (header >> 1) * 8 if packed else header >> 1))
        at = after + (header >> 1 if packed else 1)
    assert at == end
    return out


def decode_all(harness: Any, path: Path, names: list[str] | None = None) -> list[pa.RecordBatch]:
    """Every row group through RowGroupDecoder, which must name any damage. The same row
    groups in one run through BatchDecoder first: where the host's reader raises, the run
    must have been declined (the kernels' walk and decoding saw the damage too); where it
    does not, the run must hold the same rows."""
    names = names or COLUMNS
    runs = harness.decode_runs(path, names)
    try:
        batches = harness.decode_all(path, names).batches
    except FileError:
        assert all(batch is None for _groups, batch in runs), "BatchDecoder decoded a damaged run"
        raise
    for groups, batch in runs:
        if batch is not None:
            assert batch.to_pylist() == [row for g in groups for row in batches[g].to_pylist()], groups
    return batches


def named_columns(error: FileError) -> list[str]:
    """The columns a FileError blames: 'row group N, column a[, b ...]: why'."""
    found = re.search(r"row group \d+, column (.+?): ", str(error))
    return found.group(1).split(", ") if found else []


def assert_names(error: FileError, path: Path, group: int, column: str, only: bool = True) -> None:
    """The error names the file, the row group and the column (`only`: that column alone)."""
    text = str(error)
    assert str(path) in text and error.path == str(path), text
    assert f"row group {group}, column " in text, text
    assert (named_columns(error) == [column]) if only else (column in named_columns(error)), text
    assert error.sqlstate == "XX001", text


def device_db() -> Any:
    return penstock.connect(device="cpu", parquet_decode="device", strict=True)


def expected_answer(path: Path) -> list[dict[str, Any]]:
    db = penstock.connect(device="cpu", parquet_decode="host", strict=True)
    db.register("t", path)
    return db.sql(QUERY).to_arrow().to_pylist()


@pytest.fixture(scope="module")
def plain_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Uncompressed, v1 pages, no CRCs: every byte of the pages as the kernels see it."""
    return write(tmp_path_factory.mktemp("plain") / "plain.parquet")


@pytest.fixture(scope="module")
def snappy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("snappy") / "snappy.parquet", compression="snappy")


def test_the_intact_files_decode(plain_file: Path, snappy_file: Path, cpu_harness: Any) -> None:
    """The baseline the damage below departs from."""
    for path in (plain_file, snappy_file):
        assert cpu_harness.check(path, COLUMNS).host_columns == {}


# ---- uncompressed pages ----------------------------------------------------------------------

@pytest.mark.parametrize("column", ["p", "s", "k", "a", "d"])
def test_a_definition_level_above_the_maximum(tmp_path: Path, plain_file: Path, cpu_harness: Any,
                                              column: str) -> None:
    """A nullable flat column's levels are 0 or 1: a run of 2s is damage, in any column."""
    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 1, column)
    bad = damage(plain_file, tmp_path / "bad.parquet", {level_run_value(raw, body, header): b"\x02"})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 1, column)


@pytest.mark.parametrize("column", ["p", "k", "a"])
def test_definition_levels_longer_than_their_page(tmp_path: Path, plain_file: Path, cpu_harness: Any,
                                                  column: str) -> None:
    """The 4-byte length in front of a v1 page's levels, made to run past the page."""
    body, _header = first_data_page(plain_file, 2, column)
    bad = damage(plain_file, tmp_path / "bad.parquet", {body: (10**6).to_bytes(4, "little")})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 2, column)


@pytest.mark.parametrize("column", ["s", "k"])
def test_a_dictionary_index_outside_the_dictionary(tmp_path: Path, plain_file: Path, cpu_harness: Any,
                                                   column: str) -> None:
    """The page's indices rewritten as 8-bit wide, one RLE run of index 255, where the
    dictionary holds 40 entries."""
    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 0, column)
    assert header.encoding in (2, 8)  # dictionary-encoded
    at = values_start(raw, body, header)
    bad = damage(plain_file, tmp_path / "bad.parquet", {at: bytes([8]) + varint(1000 << 1) + b"\xFF"})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 0, column)


@pytest.mark.parametrize("column", ["s", "k"])
def test_a_dictionary_index_bit_width_past_32(tmp_path: Path, plain_file: Path, cpu_harness: Any,
                                              column: str) -> None:
    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 2, column)
    bad = damage(plain_file, tmp_path / "bad.parquet", {values_start(raw, body, header): b"\x21"})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 2, column)


def test_a_text_length_past_its_page(tmp_path: Path, plain_file: Path, cpu_harness: Any) -> None:
    """The first PLAIN value's 4-byte length made 2 GiB."""
    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 1, "p")
    at = values_start(raw, body, header)
    assert raw[at + 4:at + 4 + int.from_bytes(raw[at:at + 4], "little")] == b"plain value 1000"
    bad = damage(plain_file, tmp_path / "bad.parquet", {at: (2**31 - 1).to_bytes(4, "little")})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 1, "p")


@pytest.mark.parametrize("column, row", [("a", 1000), ("d", 1001)])
def test_a_flipped_bit_inside_a_plain_number_stays_where_it_was_made(tmp_path: Path, plain_file: Path,
                                                                     cpu_harness: Any, column: str, row: int) -> None:
    """Without a CRC nothing can tell a flipped bit in a PLAIN int64 or double: the value
    changes, as pyarrow reads it too, and no other row does."""
    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 1, column)
    at = values_start(raw, body, header) + 8 * (row - 1000) + 6  # a high byte of the row's value
    bad = damage(plain_file, tmp_path / "bad.parquet", {at: bytes([raw[at] ^ 0x10])})
    got = decode_all(cpu_harness, bad, [column])[1].column(0).to_pylist()
    intact = pq.ParquetFile(plain_file).read_row_group(1, columns=[column]).column(0).to_pylist()
    assert pq.ParquetFile(bad).read_row_group(1, columns=[column]).column(0).to_pylist() == got
    assert [k for k in range(GROUP) if got[k] != intact[k]] == [row - 1000]


def test_a_page_that_claims_more_bytes_than_its_chunk(tmp_path: Path, plain_file: Path, cpu_harness: Any) -> None:
    """compressed_page_size (field 3 of the header) raised past the chunk's end, its varint
    kept the same length so the rest of the header stays in place."""
    at, header = pages(plain_file, 1, "a")[0]
    raw = plain_file.read_bytes()
    old = b"\x15" + varint(header.compressed_size << 1)
    # field 1 (the page type, 2 bytes), field 2 (uncompressed size: the same bytes), field 3
    assert raw[at + 2:at + 2 + len(old)] == old and raw[at + 2 + len(old):at + 2 + 2 * len(old)] == old
    field = at + 2 + len(old)
    biggest = (1 << (7 * (len(old) - 1))) // 2 - 1
    new = b"\x15" + varint(biggest << 1)
    chunk_size = pq.ParquetFile(plain_file).metadata.row_group(1).column(COLUMNS.index("a")).total_compressed_size
    assert len(new) == len(old) and biggest > chunk_size
    bad = damage(plain_file, tmp_path / "bad.parquet", {field: new})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 1, "a")
    assert "claims" in str(e.value)


def test_a_truncated_file_end_to_end(tmp_path: Path, plain_file: Path) -> None:
    """A file cut in half has no footer: the table cannot be opened, the file is named."""
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(plain_file.read_bytes()[: plain_file.stat().st_size // 2])
    db = device_db()
    with pytest.raises(FileError) as e:
        db.register("t", cut)
        db.sql(QUERY)
    assert str(cut) in str(e.value)


# ---- compressed pages ------------------------------------------------------------------------

@pytest.mark.parametrize("column", ["p", "k", "a"])
def test_a_snappy_page_that_does_not_decompress(tmp_path: Path, snappy_file: Path, cpu_harness: Any,
                                                column: str) -> None:
    """The page's snappy preamble (the decompressed length) made wrong: decompression fails
    or comes out at another size than the header says."""
    raw = snappy_file.read_bytes()
    body, header = first_data_page(snappy_file, 1, column)
    length, _after = uleb(raw, body)
    assert length == header.uncompressed_size
    bad = damage(snappy_file, tmp_path / "bad.parquet", {body: bytes([raw[body] ^ 0x08])})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 1, column, only=False)
    assert "SNAPPY" in str(e.value)
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad, [column])
    assert_names(e.value, bad, 1, column)


def test_levels_of_a_snappy_v2_page(tmp_path: Path, cpu_harness: Any) -> None:
    """v2 pages keep their levels uncompressed ahead of the snappy values: levels damaged
    there are caught by the kernels, not by the decompressor."""
    good = write(tmp_path / "v2.parquet", compression="snappy", version="2.0")
    raw = good.read_bytes()
    body, header = first_data_page(good, 2, "d")
    assert header.type == DATA_PAGE_V2 and header.definition_levels_length > 0
    bad = damage(good, tmp_path / "bad.parquet", {level_run_value(raw, body, header): b"\x03"})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 2, "d")
    assert "does not decompress" not in str(e.value)


@pytest.mark.parametrize("compression", ["none", "snappy", "zstd"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_a_page_crc_that_does_not_match(tmp_path: Path, cpu_harness: Any, compression: str, version: str) -> None:
    """With page CRCs, one flipped bit anywhere in a page's stored bytes is refused, even
    where the page would still decode (a value of a PLAIN column)."""
    good = write(tmp_path / "crc.parquet", compression=compression, version=version, checksums=True)
    for group, column, offset in [(1, "a", -3), (2, "s", 5), (0, "d", 0)]:
        at, header = pages(good, group, column)[-1]
        body = at + header.header_length
        spot = body + offset if offset >= 0 else body + header.compressed_size + offset
        raw = good.read_bytes()
        bad = damage(good, tmp_path / f"bad{group}.parquet", {spot: bytes([raw[spot] ^ 0x01])})
        with pytest.raises(FileError) as e:
            decode_all(cpu_harness, bad)
        assert_names(e.value, bad, group, column)
        assert "CRC" in str(e.value)


@pytest.mark.parametrize("compression", ["none", "snappy", "zstd"])
def test_random_damage_to_a_file_with_crcs_is_an_error_or_changes_nothing(tmp_path: Path, cpu_harness: Any,
                                                                          compression: str) -> None:
    """Bytes flipped anywhere in the column chunks (headers included, which no CRC covers):
    each decode either raises FileError naming file and row group, or equals the intact
    file's, column by column."""
    good = write(tmp_path / "good.parquet", compression=compression, checksums=True, data_page_size=4096)
    expected = [b.to_pylist() for b in decode_all(cpu_harness, good)]
    meta = pq.ParquetFile(good).metadata
    chunks = []
    for g in range(meta.num_row_groups):
        for j in range(meta.num_columns):
            c = meta.row_group(g).column(j)
            chunks.append((c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset,
                           c.total_compressed_size))
    rng = random.Random(20240611)
    raw = good.read_bytes()
    errors = 0
    for attempt in range(25):
        start, size = rng.choice(chunks)
        spots = {start + rng.randrange(size) for _ in range(rng.choice([1, 1, 3]))}
        edits = {s: bytes([raw[s] ^ rng.randrange(1, 256)]) for s in spots}
        bad = damage(good, tmp_path / f"bad{attempt}.parquet", edits)
        try:
            got = [b.to_pylist() for b in decode_all(cpu_harness, bad)]
        except FileError as e:
            assert str(bad) in str(e) and "row group" in str(e) and e.sqlstate == "XX001", str(e)
            errors += 1
            continue
        assert got == expected, f"damage at {sorted(spots)} changed the answer"
    assert errors >= 15


@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_random_damage_to_page_headers_without_crcs(tmp_path: Path, cpu_harness: Any, compression: str) -> None:
    """Page-header bytes overwritten at random in a file without CRCs, where the kernels walk
    the headers themselves: the batch path declines the run or decodes exactly what the
    host's reader decodes (decode_all checks both), and the host's reader names any damage."""
    good = write(tmp_path / "good.parquet", compression=compression, data_page_size=4096)
    raw = good.read_bytes()
    headers = [(at, header) for g in range(ROWS // GROUP) for column in COLUMNS for at, header in pages(good, g, column)]
    rng = random.Random(99)
    for attempt in range(30):
        at, header = rng.choice(headers)
        spot = at + rng.randrange(header.header_length)
        bad = damage(good, tmp_path / f"bad{attempt}.parquet", {spot: bytes([raw[spot] ^ rng.randrange(1, 256)])})
        try:
            decode_all(cpu_harness, bad)
        except FileError as e:
            assert str(bad) in str(e) and "row group" in str(e) and e.sqlstate == "XX001", str(e)


# ---- end to end ------------------------------------------------------------------------------

def test_end_to_end_damaged_tables_fail_and_the_connection_goes_on(tmp_path: Path, plain_file: Path,
                                                                  snappy_file: Path) -> None:
    """A CRC mismatch, a bad definition level, a dictionary index outside the dictionary and
    a snappy page that does not decompress, each through SQL: FileError naming file, row
    group and column; the same connection then answers on an intact table, and refuses the
    damaged one again (nothing half-read was kept)."""
    good = write(tmp_path / "good.parquet", compression="snappy", version="2.0", checksums=True)
    expected = expected_answer(good)
    raw = good.read_bytes()
    at, header = pages(good, 1, "a")[-1]
    spot = at + header.header_length + header.compressed_size - 2
    crc_bad = damage(good, tmp_path / "crc_bad.parquet", {spot: bytes([raw[spot] ^ 0x40])})

    v2 = write(tmp_path / "v2.parquet", version="2.0")
    body, header = first_data_page(v2, 2, "k")
    level_bad = damage(v2, tmp_path / "level_bad.parquet", {level_run_value(v2.read_bytes(), body, header): b"\x02"})

    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 1, "s")
    index_bad = damage(plain_file, tmp_path / "index_bad.parquet",
                       {values_start(raw, body, header): bytes([8]) + varint(1000 << 1) + b"\xFF"})

    raw = snappy_file.read_bytes()
    body, _header = first_data_page(snappy_file, 0, "d")
    snappy_bad = damage(snappy_file, tmp_path / "snappy_bad.parquet", {body: bytes([raw[body] ^ 0x08])})

    db = device_db()
    db.register("t", good)
    cases = [(crc_bad, 1, "a", "CRC"), (level_bad, 2, "k", "does not decode"), (index_bad, 1, "s", "does not decode"),
             (snappy_bad, 0, "d", "does not decompress")]
    for k, (bad, group, column, text) in enumerate(cases):
        db.register(f"b{k}", bad)
        with pytest.raises(FileError) as e:
            db.sql(QUERY.replace("FROM t", f"FROM b{k}")).to_arrow()
        assert_names(e.value, bad, group, column, only=text != "does not decompress")
        assert text in str(e.value)
        assert db.sql(QUERY).to_arrow().to_pylist() == expected
    with pytest.raises(FileError):
        db.sql("SELECT sum(a) FROM b0").to_arrow()
    assert db.sql("SELECT sum(a) AS sa FROM t").to_arrow().to_pylist() == [{"sa": expected[0]["sa"]}]


# ---- bugs: damage the device path gets wrong -------------------------------------------------
# Each test below failed against the decoder's first version; its comment says what that got.

def test_a_file_cut_short_under_the_decoder(tmp_path: Path, plain_file: Path, cpu_harness: Any) -> None:
    """The footer was read, then the file lost its last row group's pages (replaced while a
    scan runs, or a footer whose offsets point past the end)."""
    path = tmp_path / "cut.parquet"
    path.write_bytes(plain_file.read_bytes())
    decoder = cpu_harness.decoder(path, COLUMNS)
    decoder.decode(0)
    with open(path, "r+b") as f:
        f.truncate(pq.ParquetFile(plain_file).metadata.row_group(2).column(0).data_page_offset)
    with pytest.raises(FileError) as e:
        decoder.decode(2)
    assert str(path) in str(e.value) and e.value.path == str(path)
    # First version: the message is "<file>: a column chunk runs past the end of the file" with
    # SQLSTATE 58030: unlike every other damage it names neither the row group nor the
    # column (decoder._read knows both), and is not XX001 (data corrupted).
    assert "row group 2" in str(e.value) and "column" in str(e.value), str(e.value)


def test_a_page_that_does_not_decompress_blames_its_own_column(tmp_path: Path, snappy_file: Path,
                                                               cpu_harness: Any) -> None:
    """Pages are decompressed one by one on the host (nvcomp.decompress_on_host), so the
    failing page's column is known."""
    raw = snappy_file.read_bytes()
    body, _header = first_data_page(snappy_file, 1, "k")
    bad = damage(snappy_file, tmp_path / "bad.parquet", {body: bytes([raw[body] ^ 0x08])})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad)
    # First version: got "row group 1, column p, s, k, a, d: a SNAPPY page does not decompress": every
    # column of the codec is blamed (decoder._decompress), not k alone.
    assert_names(e.value, bad, 1, "k")


def test_damage_in_a_number_column_is_not_blamed_on_a_text_column_after_it(tmp_path: Path, plain_file: Path,
                                                                            cpu_harness: Any) -> None:
    """The kernels of every column share one error flag, checked only at the end, but a
    text column checks it (decoder._gather) when it is decoded: a bad page in a number
    column decoded before a text column is reported as the text column's."""
    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 1, "a")
    bad = damage(plain_file, tmp_path / "bad.parquet", {level_run_value(raw, body, header): b"\x02"})
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad, ["a", "d"])  # no text after it: named right
    assert_names(e.value, bad, 1, "a")
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad, ["a", "p"])
    # First version: got "row group 1, column p: a text page does not decode"; column a is the damaged one.
    assert_names(e.value, bad, 1, "a")


CHILD = """
import sys
from pathlib import Path
import pyarrow.parquet as pq
from penstock.device import get_backend
from penstock.errors import FileError
from penstock.io.device_batch import batch_to_arrow
from penstock.io.parquet.device.batch_decoder import BatchDecoder
from penstock.io.parquet.device.decoder import RowGroupDecoder
from penstock.plan.types import from_arrow

path = Path(sys.argv[1])
file = pq.ParquetFile(path)
names = file.schema_arrow.names
types = [from_arrow(file.schema_arrow.field(c).type) for c in names]
backend = get_backend("cpu")
decoder = RowGroupDecoder(backend, path, file, names, types)
batches = BatchDecoder(decoder)
run = list(range(file.metadata.num_row_groups))
print("BatchDecoder:", "declined" if batches.decode(batches.read(run)) is None else "decoded")
try:
    for g in range(file.metadata.num_row_groups):
        batch = batch_to_arrow(decoder.decode(g), names, backend)
        for c in names:
            column = batch.column(c)
            if column.type == "string":
                longest = max(len(v or b"") for v in column.cast("binary").to_pylist())
                print(f"decoded row group {g}, {batch.num_rows} rows; {c}: longest value {longest} bytes")
            else:
                print(f"decoded row group {g}, {batch.num_rows} rows; {c}: last values {column.to_pylist()[-12:]}")
except FileError as e:
    print("FileError:", e)
"""


def decode_in_a_child(path: Path) -> subprocess.CompletedProcess[str]:
    """Decode `path` in a fresh interpreter: a kernel that writes past its buffers aborts
    that process, not the test run."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), str(path)], capture_output=True, text=True,
                          timeout=120)


def test_a_dictionary_index_run_whose_length_overflows(tmp_path: Path) -> None:
    """A bit-packed run header of 6148914691236517206 groups of 3-bit indices: groups*3
    wraps to 2 bytes (within the page) while groups*8 wraps negative, so the run never
    ends and the kernel reads indices from past the page (pyarrow: 'Unexpected end of
    stream'). Every 3-bit index is inside a dictionary of 8, so nothing is noticed."""
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({"a": pa.array([k % 8 for k in range(400)], pa.int64())},
                            schema=pa.schema([pa.field("a", pa.int64(), nullable=False)])),
                   path, compression="none", use_dictionary=True)
    raw = path.read_bytes()
    at, header = [(at, h) for at, h in pages_any(path, 0, 0) if h.type == DATA_PAGE][0]
    body = at + header.header_length
    assert raw[body] == 3  # bit width 3, then the runs
    assert 11 + (400 * 3 + 7) // 8 > header.compressed_size  # 400 indices from byte 11 on end past the page
    groups = -(-2**64 // 3)
    bad = damage(path, tmp_path / "bad.parquet", {body: bytes([3]) + varint(groups << 1 | 1)})
    with pytest.raises((OSError, pa.ArrowException)):
        pq.read_table(bad)
    result = decode_in_a_child(bad)
    assert result.returncode == 0, result.stderr[-2000:]
    # First version: got "decoded row group 0, 400 rows; a: last values [...]": the last ~24 indices come from 9 bytes
    # past the page (Hybrid::next_run computes groups*width and groups*8 in int64, unchecked).
    assert "FileError" in result.stdout and "row group 0, column a" in result.stdout, result.stdout
    assert "BatchDecoder: declined" in result.stdout, result.stdout


def test_a_chunk_with_more_values_than_its_row_group_has_rows(tmp_path: Path) -> None:
    """The footer's value count of a chunk (and its page's) raised from 1237 to 1337, the
    row group still of 1237 rows: the pages are checked against the chunk's count, but
    nothing checks the chunk against the row group, and the kernel writes 100 values past
    the end of its output arrays (glibc: 'double free or corruption', SIGABRT)."""
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"a": pa.array([None] * 1237, pa.int64())}), path, compression="none",
                   use_dictionary=False, write_statistics=False)
    raw = path.read_bytes()
    old, new = varint(1237 << 1), varint(1337 << 1)
    footer_key = b"\x18\x01a\x15\x00\x16"  # path_in_schema ["a"], codec 0, then num_values (i64)
    assert len(old) == len(new) and raw.count(footer_key + old) == 1
    raw = raw.replace(b"\x2c\x15" + old, b"\x2c\x15" + new, 1)  # the data page header's num_values
    raw = raw.replace(b"\x03\x00\x00\x00" + old + b"\x00", b"\x03\x00\x00\x00" + new + b"\x00", 1)  # its levels
    raw = raw.replace(footer_key + old, footer_key + new)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(raw)
    meta = pq.ParquetFile(bad).metadata
    assert (meta.row_group(0).num_rows, meta.row_group(0).column(0).num_values) == (1237, 1337)
    result = decode_in_a_child(bad)
    # First version: the child dies of heap corruption (returncode -6, "double free or corruption").
    assert result.returncode == 0, f"child died ({result.returncode}): {result.stderr[-300:]}"
    assert "FileError" in result.stdout and "row group 0, column a" in result.stdout, result.stdout
    assert "BatchDecoder: declined" in result.stdout, result.stdout


def test_an_uncompressed_page_whose_uncompressed_size_lies(tmp_path: Path) -> None:
    """In an UNCOMPRESSED chunk a page's bytes are its compressed_page_size, but the kernels
    are given uncompressed_page_size as its end (Page.decoded_size), which nothing checks
    against the bytes there are. Raised to 500 000 (the page has 45 000), with the last
    value's length raised to 300 000, the kernel copies 300 000 bytes from past the page
    (past the read buffer) into the result; pyarrow refuses the page."""
    path = tmp_path / "text.parquet"
    pq.write_table(pa.table({"s": [f"value-{k:05d}" for k in range(3000)]},
                            schema=pa.schema([pa.field("s", pa.string(), nullable=False)])),
                   path, compression="none", use_dictionary=False, write_statistics=False)
    at, header = pages_any(path, 0, 0)[0]
    assert header.uncompressed_size == header.compressed_size == 45000
    old, new = b"\x15" + varint(45000 << 1), b"\x15" + varint(500000 << 1)
    assert len(old) == len(new)
    raw = path.read_bytes()
    assert raw[at + 2:at + 2 + len(old)] == old  # field 2, after the page type
    end = at + header.header_length + header.compressed_size
    last = end - len("value-02999") - 4
    assert int.from_bytes(raw[last:last + 4], "little") == len("value-02999")
    bad = damage(path, tmp_path / "bad.parquet", {at + 2: new, last: (300000).to_bytes(4, "little")})
    with pytest.raises((OSError, pa.ArrowException)):
        pq.read_table(bad)
    result = decode_in_a_child(bad)
    assert result.returncode == 0, f"child died ({result.returncode}): {result.stderr[-300:]}"
    # First version: got "decoded row group 0, 3000 rows; s: longest value 300000 bytes": whatever followed the page.
    assert "FileError" in result.stdout and "row group 0, column s" in result.stdout, result.stdout
    assert "BatchDecoder: declined" in result.stdout, result.stdout



def test_a_level_run_that_no_longer_fits_its_section(tmp_path: Path, plain_file: Path, cpu_harness: Any) -> None:
    """A bit-packed level run's header made one group longer: it swallows the next run's
    header and leaves a run of no values behind, so every read stays in bounds and the
    section still ends where its runs do (pyarrow: 'Number of decoded rep / def levels do
    not match num_values'). A run of no values where values are still needed is damage
    (kernels/parquet.h Hybrid::next_run, parquet_block.h read_runs): before, 683 of the row
    group's 1000 rows came back with other NULLs than the file's, without an error."""
    raw = plain_file.read_bytes()
    body, header = first_data_page(plain_file, 2, "k")
    length = int.from_bytes(raw[body:body + 4], "little")
    packed = [at for at, is_packed, _n in level_runs(raw, body + 4, body + 4 + length) if is_packed]
    assert raw[packed[0]] < 0x7F  # a one-byte header: one more group keeps it one byte
    bad = damage(plain_file, tmp_path / "bad.parquet", {packed[0]: bytes([raw[packed[0]] + 2])})
    with pytest.raises((OSError, pa.ArrowException), match="levels"):
        pq.ParquetFile(bad).read_row_group(2)
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad, ["k"])
    assert_names(e.value, bad, 2, "k")


@pytest.mark.parametrize("compression", ["snappy", "gzip"])
def test_a_compressed_page_shorter_than_its_header_says(tmp_path: Path, cpu_harness: Any, compression: str) -> None:
    """A page header's uncompressed_page_size raised by 16 (its varint the same length):
    the page decompresses to 16 bytes fewer (pyarrow: "Page didn't decompress to expected
    size"). decompress_on_host checks the output's size, but pyarrow's Codec.decompress
    returns a buffer of the size asked for whatever it wrote, so the check never fires and
    the page's last 16 bytes are whatever the buffer held."""
    good = write(tmp_path / "good.parquet", compression=compression)
    at, header = pages(good, 1, "a")[0]
    raw = good.read_bytes()
    old, new = b"\x15" + varint(header.uncompressed_size << 1), b"\x15" + varint((header.uncompressed_size + 16) << 1)
    assert len(old) == len(new) and raw[at + 2:at + 2 + len(old)] == old  # field 2, after the page type
    bad = damage(good, tmp_path / "bad.parquet", {at + 2: new})
    with pytest.raises((OSError, pa.ArrowException), match="decompress"):
        pq.ParquetFile(bad).read_row_group(1)
    with pytest.raises(FileError) as e:  # first version: decoded without error
        decode_all(cpu_harness, bad)
    assert_names(e.value, bad, 1, "a")


def test_a_page_in_an_encoding_that_does_not_exist(tmp_path: Path, plain_file: Path, cpu_harness: Any) -> None:
    """A data page header's encoding damaged to 12 (no Parquet encoding has that number).
    read_pages takes it for an encoding the kernels lack and leaves the column to pyarrow,
    whose error then escapes as it is: OSError('Unknown encoding type.'), not FileError.
    The host path (parquet_decode='host') answers FileError naming row group 1, column a."""
    raw = plain_file.read_bytes()
    at, header = pages(plain_file, 1, "a")[0]
    key = b"\x2c\x15" + varint(header.num_values << 1) + b"\x15\x00"  # field 5 {num_values, encoding PLAIN}
    field = raw.index(key, at)
    assert field < at + header.header_length
    bad = damage(plain_file, tmp_path / "bad.parquet", {field + len(key) - 1: varint(12 << 1)})
    host = penstock.connect(device="cpu", parquet_decode="host", strict=True)
    host.register("t", bad)
    with pytest.raises(FileError) as e:
        host.sql("SELECT sum(a) FROM t").to_arrow()
    assert "row group 1, column a" in str(e.value)
    db = device_db()
    db.register("t", bad)
    # First version: raises OSError('Unknown encoding type.') here, and from RowGroupDecoder.decode(1)
    with pytest.raises(FileError) as e:
        db.sql("SELECT sum(a) FROM t").to_arrow()
    assert_names(e.value, bad, 1, "a")


def test_a_damaged_page_of_a_column_pyarrow_reads_for_the_device(tmp_path: Path) -> None:
    """Booleans are left to pyarrow (host_columns); a page of theirs with a CRC that does
    not match must still be FileError naming row group and column, as on the host path,
    not pyarrow's own OSError."""
    path = tmp_path / "good.parquet"
    pq.write_table(pa.table({"b": [k % 3 == 0 for k in range(3000)], "i": pa.array(range(3000), pa.int64())}),
                   path, row_group_size=1000, write_page_checksum=True, compression="none")
    at, header = pages_any(path, 1, 0)[-1]
    spot = at + header.header_length + header.compressed_size - 1
    raw = path.read_bytes()
    bad = damage(path, tmp_path / "bad.parquet", {spot: bytes([raw[spot] ^ 0x01])})
    host = penstock.connect(device="cpu", parquet_decode="host", strict=True)
    host.register("t", bad)
    with pytest.raises(FileError) as e:
        host.sql("SELECT count(*) FROM t WHERE b").to_arrow()
    assert "row group 1, column b" in str(e.value)
    db = device_db()
    db.register("t", bad)
    # First version: raises OSError("CRC checksum verification failed for page ...") from decoder.finish's read_row_group
    with pytest.raises(FileError) as e:
        db.sql("SELECT count(*) FROM t WHERE b").to_arrow()
    assert "row group 1, column b" in str(e.value) and e.value.sqlstate == "XX001"


# ---- DELTA_BINARY_PACKED and DELTA_LENGTH_BYTE_ARRAY -----------------------------------------

DELTA_COLUMNS = ["a", "p", "d"]


def delta_file(path: Path) -> Path:
    """a: required int64, DELTA_BINARY_PACKED; p: required text, DELTA_LENGTH_BYTE_ARRAY;
    d: required text, DELTA_BYTE_ARRAY; uncompressed v1 pages (no levels: the page body is
    the encoded stream)."""
    rows = 2000
    table = pa.table({"a": pa.array([k * 1000 + (k % 7) for k in range(rows)], pa.int64()),
                      "p": pa.array([f"text {k}" for k in range(rows)]),
                      "d": pa.array([f"shared prefix {k // 4}" for k in range(rows)])},
                     schema=pa.schema([pa.field(c, pa.int64() if c == "a" else pa.string(), nullable=False)
                                       for c in DELTA_COLUMNS]))
    pq.write_table(table, path, row_group_size=GROUP, compression="none", use_dictionary=False,
                   column_encoding={"a": "DELTA_BINARY_PACKED", "p": "DELTA_LENGTH_BYTE_ARRAY",
                                    "d": "DELTA_BYTE_ARRAY"})
    return path


def delta_damage(tmp_path: Path, cpu_harness: Any, column: str, edit: Any) -> FileError:
    """Damage the first page of `column` in row group 1 (edit(raw, body) -> {offset: bytes})
    and decode: the host's reader must name it, and the batch path must decline."""
    good = delta_file(tmp_path / "delta.parquet")
    raw = good.read_bytes()
    j = DELTA_COLUMNS.index(column)
    at, header = next((at, h) for at, h in pages_any(good, 1, j) if h.type != DICTIONARY_PAGE)
    bad = damage(good, tmp_path / "bad.parquet", edit(raw, at + header.header_length))
    with pytest.raises(FileError) as e:
        decode_all(cpu_harness, bad, DELTA_COLUMNS)
    assert_names(e.value, bad, 1, column)
    return e.value


def test_a_delta_block_size_of_zero(tmp_path: Path, cpu_harness: Any) -> None:
    """The stream's first varint (values per block) made 0: no block can hold a value."""
    delta_damage(tmp_path, cpu_harness, "a", lambda raw, body: {body: b"\x00"})


def test_a_delta_miniblock_wider_than_64_bits(tmp_path: Path, cpu_harness: Any) -> None:
    """The first block's first miniblock bit width (after the header's four varints and the
    block's minimum delta) made 65."""
    def edit(raw: bytes, body: int) -> dict[int, bytes]:
        at = body
        for _ in range(5):  # block size, miniblocks, count, first value, minimum delta
            _value, at = uleb(raw, at)
        return {at: bytes([65])}
    delta_damage(tmp_path, cpu_harness, "a", edit)


def test_a_delta_count_past_the_page(tmp_path: Path, cpu_harness: Any) -> None:
    """The header's value count (third varint) raised by one: more values than the page's rows."""
    def edit(raw: bytes, body: int) -> dict[int, bytes]:
        at = body
        for _ in range(2):
            _value, at = uleb(raw, at)
        count, after = uleb(raw, at)
        new = varint(count + 1)
        assert len(new) == after - at
        return {at: new}
    delta_damage(tmp_path, cpu_harness, "a", edit)


def test_delta_lengths_that_overrun_the_page(tmp_path: Path, cpu_harness: Any) -> None:
    """DELTA_LENGTH_BYTE_ARRAY whose first length (the header's first value) is made huge:
    the lengths no longer add up to the bytes after them."""
    def edit(raw: bytes, body: int) -> dict[int, bytes]:
        at = body
        for _ in range(3):
            _value, at = uleb(raw, at)
        first, after = uleb(raw, at)
        new = varint((1 << (7 * (after - at) - 1)) - 2)  # zigzag of a large length, same byte count
        assert len(new) == after - at and new != raw[at:after]
        return {at: new}
    delta_damage(tmp_path, cpu_harness, "p", edit)


def test_a_delta_prefix_longer_than_the_value_before(tmp_path: Path, cpu_harness: Any) -> None:
    """DELTA_BYTE_ARRAY: the first value's prefix length (the prefix stream's first value,
    which must be 0: there is no value before) made 1."""
    def edit(raw: bytes, body: int) -> dict[int, bytes]:
        at = body
        for _ in range(3):
            _value, at = uleb(raw, at)
        assert raw[at] == 0  # zigzag 0
        return {at: b"\x02"}
    delta_damage(tmp_path, cpu_harness, "d", edit)
