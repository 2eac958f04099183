"""Which columns the device decodes, and the pages of a column chunk.

The host reads each column chunk's page headers (thrift.py) and lays its pages out: where
each page's bytes sit in the chunk, which need decompressing and into how many bytes. A
column the device cannot decode (nested, unsigned or wide types, a codec nvCOMP lacks) is
named with the reason and read by pyarrow instead. PageCache keeps the parsed headers.
"""

from __future__ import annotations

import os

import threading
import zlib
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from penstock.io.parquet.device.thrift import DATA_PAGE, DATA_PAGE_V2, DICTIONARY_PAGE, INDEX_PAGE, PageHeader, \
    read_page_header

# Parquet encodings (format/Encodings.md)
PLAIN, PLAIN_DICTIONARY, RLE, RLE_DICTIONARY = 0, 2, 3, 8
DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT = 5, 6, 7, 9
DICTIONARY_ENCODINGS = (PLAIN_DICTIONARY, RLE_DICTIONARY)
# kernels/parquet.h's page encodings (the page table's W_ENCODING)
ENC_PLAIN, ENC_DICTIONARY, ENC_DELTA_BINARY, ENC_DELTA_LENGTH, ENC_BYTE_STREAM_SPLIT = 0, 1, 2, 3, 4
ENC_RLE, ENC_DELTA_TEXT = 5, 6
KERNEL_ENCODING = {PLAIN: ENC_PLAIN, PLAIN_DICTIONARY: ENC_DICTIONARY, RLE_DICTIONARY: ENC_DICTIONARY,
                   DELTA_BINARY_PACKED: ENC_DELTA_BINARY, DELTA_LENGTH_BYTE_ARRAY: ENC_DELTA_LENGTH,
                   DELTA_BYTE_ARRAY: ENC_DELTA_TEXT, BYTE_STREAM_SPLIT: ENC_BYTE_STREAM_SPLIT,
                   RLE: ENC_RLE}  # RLE: booleans only
# kernels/parquet.h's modes: how a fixed-width page's values are written
MODE_VALUES, MODE_INDICES, MODE_BIG_ENDIAN, MODE_BOOLEAN, MODE_INT96, MODE_TEXT_INDICES, MODE_BYTES = range(7)
ENCODING_NAMES = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
                  6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}
CODECS = ("UNCOMPRESSED", "SNAPPY", "ZSTD", "LZ4_RAW", "GZIP")


@dataclass(frozen=True)
class FixedLayout:
    """How the kernels write a fixed-width column: bytes per stored and per decoded value,
    the mode, and whether the bytes are then packed into a bitmap (booleans)."""
    in_width: int
    out_width: int
    mode: int
    bits: bool = False


@dataclass
class Page:
    header: PageHeader
    body: int  # offset of the page's bytes in the chunk

    @property
    def levels_length(self) -> int:
        """v2 pages: bytes of levels ahead of the values (never compressed)."""
        h = self.header
        return h.definition_levels_length + h.repetition_levels_length if h.type == DATA_PAGE_V2 else 0

    def compressed(self, codec: str) -> bool:
        return codec != "UNCOMPRESSED" and (self.header.type != DATA_PAGE_V2 or self.header.is_compressed)

    @property
    def stored_size(self) -> int:
        """Bytes of the page's values (levels too in v1) as stored."""
        return self.header.compressed_size - self.levels_length

    @property
    def decoded_size(self) -> int:
        """Bytes of the same once decompressed."""
        return self.header.uncompressed_size - self.levels_length


@dataclass
class ChunkPages:
    dictionary: Page | None = None
    data: list[Page] = field(default_factory=list)


def device_fixed_width(physical: str, arrow: pa.DataType, type_length: int = 0) -> tuple[int, int] | None:
    """(bytes per stored value, bytes per decoded value) of a fixed-width column the device
    decodes into the layout the engine reads; None if it does not. FIXED_LEN_BYTE_ARRAY
    decimals (big-endian, `type_length` bytes) of up to 18 digits become 64-bit words;
    FIXED_LEN_BYTE_ARRAY read as fixed_size_binary (signatures) stays its bytes."""
    if physical == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_decimal(arrow) and arrow.precision <= 18 \
            and 0 < type_length <= 8:
        return type_length, 8
    if physical == "FIXED_LEN_BYTE_ARRAY" and pa.types.is_fixed_size_binary(arrow) and \
            0 < type_length == arrow.byte_width:
        return type_length, type_length
    if physical == "BOOLEAN" and pa.types.is_boolean(arrow):
        return 1, 1  # a bit a value as stored; a byte a row as written, packed afterwards
    if physical == "INT96" and pa.types.is_timestamp(arrow):
        return 12, 8
    if physical == "INT32":
        if pa.types.is_int8(arrow):
            return 4, 1
        if pa.types.is_int16(arrow):
            return 4, 2
        if pa.types.is_int32(arrow) or pa.types.is_date32(arrow):
            return 4, 4
        if pa.types.is_decimal(arrow) and arrow.precision <= 18:
            return 4, 8
    if physical == "INT64" and (pa.types.is_int64(arrow) or pa.types.is_timestamp(arrow)
                                or (pa.types.is_decimal(arrow) and arrow.precision <= 18)):
        return 8, 8
    if physical == "FLOAT" and pa.types.is_float32(arrow):
        return 4, 4
    if physical == "DOUBLE" and pa.types.is_float64(arrow):
        return 8, 8
    return None


def fixed_layout(physical: str, arrow: pa.DataType, type_length: int = 0) -> FixedLayout | None:
    """The kernels' layout of a fixed-width column; None if they do not decode it."""
    widths = device_fixed_width(physical, arrow, type_length)
    if widths is None:
        return None
    if pa.types.is_fixed_size_binary(arrow):
        return FixedLayout(widths[0], widths[1], MODE_BYTES, False)
    mode = {"FIXED_LEN_BYTE_ARRAY": MODE_BIG_ENDIAN, "BOOLEAN": MODE_BOOLEAN, "INT96": MODE_INT96}.get(physical,
                                                                                                    MODE_VALUES)
    return FixedLayout(widths[0], widths[1], mode, physical == "BOOLEAN")


def data_encodings(physical: str) -> frozenset[int]:
    """The data-page encodings the kernels decode for a physical type."""
    kinds = {PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY}
    if physical in ("INT32", "INT64"):
        kinds |= {DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT}
    elif physical in ("FLOAT", "DOUBLE"):
        kinds.add(BYTE_STREAM_SPLIT)
    elif physical == "BYTE_ARRAY":
        kinds |= {DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY}
    elif physical == "BOOLEAN":
        kinds = {PLAIN, RLE}  # never dictionary-encoded
    return frozenset(kinds)


def unsupported_reason(physical: str, arrow: pa.DataType, max_def: int, max_rep: int, codec: str,
                       encodings: tuple[str, ...], type_length: int = 0) -> str | None:
    """Why the device cannot decode this column chunk; None if it can."""
    if max_rep > 0 or max_def > 1:
        return "nested"
    text = physical == "BYTE_ARRAY" and (pa.types.is_string(arrow) or pa.types.is_large_string(arrow))
    if not text and device_fixed_width(physical, arrow, type_length) is None:
        return f"{physical} as {arrow}"
    if codec not in CODECS:
        return f"codec {codec}"
    known = {ENCODING_NAMES[e] for e in data_encodings(physical)} | {"RLE", "BIT_PACKED"}  # RLE: the levels
    odd = [e for e in encodings if e not in known]
    if odd:
        return f"encoding {odd[0]}"
    return None


HEADER_WINDOW = 256  # bytes copied to parse a page header; more when its statistics are longer


def _header_at(data: memoryview, at: int, end: int) -> PageHeader:
    """The page header at `at`, parsed from a small copy (indexing bytes is the fastest a
    Python loop gets; copying the whole chunk for it is not)."""
    size = HEADER_WINDOW
    while True:
        window = bytes(data[at:min(end, at + size)])
        try:
            return read_page_header(window, 0, len(window))
        except ValueError:
            if at + size >= end:
                raise
            size *= 16


def read_pages(data: memoryview, num_values: int, codec: str = "UNCOMPRESSED", verify_crc: bool = True,
               encodings: frozenset[int] = frozenset((PLAIN, *DICTIONARY_ENCODINGS))) -> ChunkPages:
    """The pages of one column chunk (`data`: its bytes), up to `num_values` values; data
    pages in `encodings` (else NotImplementedError: pyarrow reads the column).
    Raises ValueError for a header that lies (sizes past the chunk, unknown page types,
    data pages in an encoding the device does not decode, a CRC that does not match)."""
    pages = ChunkPages()
    at, end, values = 0, len(data), 0
    while values < num_values:
        if at >= end:
            raise ValueError(f"column chunk ends after {values} of its {num_values} values")
        header = _header_at(data, at, end)
        body = at + header.header_length
        if header.compressed_size > end - body:
            raise ValueError(f"page at byte {at} claims {header.compressed_size} bytes; the chunk has {end - body}")
        if verify_crc and header.crc is not None and \
                zlib.crc32(data[body:body + header.compressed_size]) != header.crc & 0xFFFFFFFF:
            raise ValueError(f"page at byte {at}: CRC does not match its bytes")
        page = Page(header, body)
        if not page.compressed(codec) and header.uncompressed_size != header.compressed_size:
            raise ValueError(f"uncompressed page at byte {at} says {header.uncompressed_size} bytes "
                             f"but stores {header.compressed_size}")
        if header.type == DICTIONARY_PAGE:
            if pages.dictionary is not None or pages.data:
                raise ValueError(f"a dictionary page at byte {at} after the first page")
            if header.encoding not in (PLAIN, PLAIN_DICTIONARY):
                raise ValueError(f"dictionary page in encoding {ENCODING_NAMES.get(header.encoding, header.encoding)}")
            pages.dictionary = page
        elif header.type in (DATA_PAGE, DATA_PAGE_V2):
            if header.encoding not in encodings:
                raise NotImplementedError(f"encoding {ENCODING_NAMES.get(header.encoding, header.encoding)}")
            if header.type == DATA_PAGE and header.definition_level_encoding != RLE:
                raise NotImplementedError("definition levels not in RLE")
            if header.encoding in DICTIONARY_ENCODINGS and pages.dictionary is None:
                raise ValueError(f"dictionary-encoded page at byte {at} without a dictionary page")
            pages.data.append(page)
            values += header.num_values
        elif header.type != INDEX_PAGE:
            raise ValueError(f"unknown page type {header.type} at byte {at}")
        at = body + header.compressed_size
    if values != num_values:
        raise ValueError(f"pages hold {values} values; the column chunk says {num_values}")
    return pages


def file_identity(path: Any) -> tuple[str, int, int]:
    """A file's key in the PageCache: a rewritten file is a new one."""
    stat = os.stat(path)
    return str(path), stat.st_mtime_ns, stat.st_size


class PageCache:
    """Parsed page headers of column chunks, by (file, mtime, size, row group, column): a
    table's scans parse each chunk's headers once (the host's largest cost per row group).
    Bounded by pages held; a full cache starts over."""

    def __init__(self, max_pages: int = 1 << 20):
        self.max_pages = max_pages
        self.pages = 0
        self.entries: dict[tuple[Any, ...], ChunkPages] = {}
        self.lock = threading.Lock()
        self.indexes: dict[tuple[Any, ...], Any] = {}  # page_index.FileIndex by (file, mtime, size)

    def get(self, key: tuple[Any, ...]) -> ChunkPages | None:
        with self.lock:
            return self.entries.get(key)

    def file_index(self, key: tuple[Any, ...], make: Any) -> Any:
        """The file's page index reader (page_index.FileIndex), made by `make` on first use:
        a table's scans read its footer's index locations once."""
        with self.lock:
            index = self.indexes.get(key)
            if index is None:
                index = self.indexes[key] = make()
            return index

    def put(self, key: tuple[Any, ...], pages: ChunkPages) -> None:
        size = len(pages.data) + 1
        with self.lock:
            if self.pages + size > self.max_pages:
                self.entries.clear()
                self.pages = 0
            self.entries[key] = pages
            self.pages += size
