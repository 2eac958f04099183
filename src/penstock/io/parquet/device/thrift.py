"""Parquet's Thrift structures, read on the host with the compact protocol.

A column chunk is a run of pages, each a Thrift-encoded PageHeader followed by its bytes;
pyarrow does not expose the headers, so this reads them (read_page_header). Nor does it
expose the footer's page index offsets or the page index itself (page_index.py). One reader
serves both: a struct's fields by id, keeping those a spec names (read_struct). Only what
decoding needs is kept; unknown fields are skipped, as Thrift requires. Malformed input
raises ValueError (the caller names the file, row group and column).
"""

from __future__ import annotations

import struct
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


def _varint(d: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, position after it) of the ULEB128 varint at `pos`."""
    value, shift = 0, 0
    while True:
        if pos >= end:
            raise ValueError("Thrift struct runs past its bytes")
        b = d[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long in page header")


def _skip(d: bytes, pos: int, end: int, kind: int, depth: int) -> int:
    """The position after a value of `kind` (one not kept)."""
    if depth > 16:
        raise ValueError("Thrift struct nests too deep")
    if kind in (_TRUE, _FALSE):
        return pos
    if kind == _BYTE:
        return pos + 1
    if kind in (_I16, _I32, _I64):
        return _varint(d, pos, end)[1]
    if kind == _DOUBLE:
        return pos + 8
    if kind == _BINARY:
        size, pos = _varint(d, pos, end)
        return pos + size
    if kind == _STRUCT:
        return _struct(d, pos, end, {}, depth + 1)[1]
    if kind in (_LIST, _SET):
        size, element, pos = _list_header(d, pos, end)
        for _ in range(size):
            pos = pos + 1 if element in (_TRUE, _FALSE) else _skip(d, pos, end, element, depth + 1)
            if pos > end:
                raise ValueError("Thrift struct runs past its bytes")
        return pos
    if kind == _MAP:
        size, pos = _varint(d, pos, end)
        if size:
            if pos >= end:
                raise ValueError("Thrift struct runs past its bytes")
            types = d[pos]
            pos += 1
            for _ in range(size):
                pos = _skip(d, pos, end, types >> 4, depth + 1)
                pos = _skip(d, pos, end, types & 0x0F, depth + 1)
        return pos
    raise ValueError(f"unknown Thrift type {kind}")


# the PageHeader fields decoding reads: type, sizes, CRC, and the three kinds of page header
_PAGE_HEADER_SPEC = {1: None, 2: None, 3: None, 4: None, 5: {1: None, 2: None, 3: None},
                     7: {1: None, 2: None}, 8: {1: None, 2: None, 4: None, 5: None, 6: None, 7: None}}


def _list_header(d: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """A list's or set's header at `pos`: (elements, their type, the position after it)."""
    if pos >= end:
        raise ValueError("Thrift struct runs past its bytes")
    head = d[pos]
    size, element = head >> 4, head & 0x0F
    if size == 15:
        size, after = _varint(d, pos + 1, end)
        return size, element, after
    return size, element, pos + 1


def read_page_header(data: bytes, at: int, end: int) -> PageHeader:
    """The PageHeader at byte `at` of `data` (bytes; a memoryview works, slower), which ends
    for this chunk at `end`."""
    f, after = _struct(data, at, end, _PAGE_HEADER_SPEC)
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
    header.header_length = after - at
    return header


def _nested(fields: dict[int, Any], key: int) -> dict[int, Any]:
    value = fields.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"page header lacks field {key}")
    return value


# -- any struct: the page headers, the footer, the page index ------------------------------------

def read_struct(data: bytes, spec: Any) -> tuple[dict[int, Any], int]:
    """The struct at the start of `data` as {field id: value}, keeping the fields `spec`
    names (a dict of field id -> the sub-spec of a struct or of a list's structs; None keeps
    every field); lists are lists, binary is bytes. Malformed input raises ValueError."""
    return _struct(data, 0, len(data), spec)


def _value(d: bytes, pos: int, end: int, kind: int, spec: Any, depth: int) -> tuple[Any, int]:
    """A value of compact-protocol type `kind`; structs keep the fields `spec` names (a
    dict of field id -> sub-spec; None keeps every field)."""
    if depth > 16:
        raise ValueError("Thrift struct nests too deep")
    if kind in (_I16, _I32, _I64):
        z, pos = _varint(d, pos, end)
        return (z >> 1) ^ -(z & 1), pos
    if kind == _BINARY:
        size, pos = _varint(d, pos, end)
        if pos + size > end:
            raise ValueError("Thrift struct runs past its bytes")
        return bytes(d[pos:pos + size]), pos + size
    if kind in (_TRUE, _FALSE):  # a list's element (a struct's booleans live in its field header)
        if pos >= end:
            raise ValueError("Thrift struct runs past its bytes")
        return d[pos] == _TRUE, pos + 1
    if kind == _BYTE:
        if pos >= end:
            raise ValueError("Thrift struct runs past its bytes")
        return d[pos], pos + 1
    if kind == _DOUBLE:
        return struct.unpack_from("<d", d, pos)[0], pos + 8
    if kind in (_LIST, _SET):
        size, element, pos = _list_header(d, pos, end)
        items = []
        for _ in range(size):
            item, pos = _value(d, pos, end, element, spec, depth + 1)
            items.append(item)
        return items, pos
    if kind == _STRUCT:
        return _struct(d, pos, end, spec, depth + 1)
    return None, _skip(d, pos, end, kind, depth)


def _struct(d: bytes, pos: int, end: int, spec: Any, depth: int = 0) -> tuple[dict[int, Any], int]:
    """A struct's fields by id, those `spec` names (None: all), and the position after it.
    Integers are read in the loop: a row group's page headers are parsed one by one."""
    fields: dict[int, Any] = {}
    last = 0
    while True:
        if pos >= end:
            raise ValueError("Thrift struct runs past its bytes")
        head = d[pos]
        pos += 1
        kind = head & 0x0F
        if kind == _STOP:
            return fields, pos
        if head >> 4:
            field = last + (head >> 4)
        else:
            z, pos = _varint(d, pos, end)
            field = (z >> 1) ^ -(z & 1)
        last = field
        if kind == _TRUE or kind == _FALSE:
            fields[field] = kind == _TRUE
        elif spec is not None and field not in spec:
            pos = _skip(d, pos, end, kind, depth)
        elif kind == _I32 or kind == _I64 or kind == _I16:
            z, pos = _varint(d, pos, end)
            fields[field] = (z >> 1) ^ -(z & 1)
        elif kind == _STRUCT:
            if depth > 16:
                raise ValueError("Thrift struct nests too deep")
            fields[field], pos = _struct(d, pos, end, None if spec is None else spec[field], depth + 1)
        else:
            fields[field], pos = _value(d, pos, end, kind, None if spec is None else spec[field], depth)
        if pos > end:
            raise ValueError("Thrift struct runs past its bytes")


