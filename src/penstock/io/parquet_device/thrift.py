"""Parquet page headers: Thrift's compact protocol, read on the host.

A column chunk is a run of pages, each a Thrift-encoded PageHeader followed by its bytes;
pyarrow does not expose the headers, so this reads them. Only what decoding needs is kept;
unknown fields are skipped, as Thrift requires. Malformed input raises ValueError (the
caller names the file, row group and column).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# compact protocol field types
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)

# PageType
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3


@dataclass
class PageHeader:
    type: int
    uncompressed_size: int
    compressed_size: int
    crc: int | None
    num_values: int = 0
    encoding: int = 0
    definition_level_encoding: int = 3  # RLE
    # data pages v2: levels stored uncompressed ahead of the (maybe compressed) values
    num_nulls: int = -1
    definition_levels_length: int = 0
    repetition_levels_length: int = 0
    is_compressed: bool = True
    header_length: int = 0  # bytes of the header itself


class _Reader:
    def __init__(self, data: memoryview, at: int, end: int):
        self.data = data
        self.at = at
        self.end = end

    def byte(self) -> int:
        if self.at >= self.end:
            raise ValueError("page header runs past the column chunk")
        b = self.data[self.at]
        self.at += 1
        return b

    def varint(self) -> int:
        value, shift = 0, 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 70:
                raise ValueError("varint too long in page header")

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def skip(self, n: int) -> None:
        if n < 0 or self.at + n > self.end:
            raise ValueError("page header field runs past the column chunk")
        self.at += n

    def value(self, kind: int, depth: int) -> Any:
        if depth > 16:
            raise ValueError("page header nests too deep")
        if kind in (_TRUE, _FALSE):
            return kind == _TRUE
        if kind == _BYTE:
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind == _DOUBLE:
            self.skip(8)
            return None
        if kind == _BINARY:
            self.skip(self.varint())
            return None
        if kind in (_LIST, _SET):
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            for _ in range(size):
                if element in (_TRUE, _FALSE):
                    self.byte()
                else:
                    self.value(element, depth + 1)
            return None
        if kind == _MAP:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.value(types >> 4, depth + 1)
                    self.value(types & 0x0F, depth + 1)
            return None
        if kind == _STRUCT:
            return self.struct(depth + 1)
        raise ValueError(f"unknown Thrift type {kind} in page header")

    def struct(self, depth: int = 0) -> dict[int, Any]:
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == _STOP:
                return fields
            delta = head >> 4
            field = last + delta if delta else self.zigzag()
            fields[field] = self.value(kind, depth)
            last = field


def read_page_header(data: memoryview, at: int, end: int) -> PageHeader:
    """The PageHeader at byte `at` of `data` (which ends, for this chunk, at `end`)."""
    reader = _Reader(data, at, end)
    f = reader.struct()
    if not all(isinstance(f.get(k), int) for k in (1, 2, 3)):
        raise ValueError("page header lacks its type or sizes")
    header = PageHeader(type=f[1], uncompressed_size=f[2], compressed_size=f[3],
                        crc=f.get(4) if isinstance(f.get(4), int) else None)
    if header.uncompressed_size < 0 or header.compressed_size < 0:
        raise ValueError("page header has a negative size")
    if header.type == DATA_PAGE:
        d = _nested(f, 5)
        header.num_values = d.get(1, 0)
        header.encoding = d.get(2, 0)
        header.definition_level_encoding = d.get(3, 3)
    elif header.type == DICTIONARY_PAGE:
        d = _nested(f, 7)
        header.num_values = d.get(1, 0)
        header.encoding = d.get(2, 0)
    elif header.type == DATA_PAGE_V2:
        d = _nested(f, 8)
        header.num_values = d.get(1, 0)
        header.num_nulls = d.get(2, 0)
        header.encoding = d.get(4, 0)
        header.definition_levels_length = d.get(5, 0)
        header.repetition_levels_length = d.get(6, 0)
        header.is_compressed = bool(d.get(7, True))
        if min(header.definition_levels_length, header.repetition_levels_length, header.num_nulls) < 0 or \
                header.definition_levels_length + header.repetition_levels_length > header.compressed_size:
            raise ValueError("data page v2 header has impossible level lengths")
    if header.num_values < 0:
        raise ValueError("page header has a negative value count")
    header.header_length = reader.at - at
    return header


def _nested(fields: dict[int, Any], key: int) -> dict[int, Any]:
    value = fields.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"page header lacks field {key}")
    return value
