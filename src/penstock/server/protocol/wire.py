"""PostgreSQL frontend/backend protocol 3.0: reading and writing messages.

Only framing lives here (no sockets' policy, no session state): a `Body` cursor parses a
message's fields, `Out` collects outgoing messages until they are flushed. Every read is
bounded; a message that breaks the framing raises `ProtocolViolation`, after which the
connection cannot be trusted and is closed (PostgreSQL does the same). A well-framed string
that is not UTF-8 is the statement's error, not the stream's: `QueryError` 22021, and the
session carries on, as in PostgreSQL.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Iterable

from penstock.errors import QueryError

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")


class ProtocolViolation(Exception):
    """The byte stream is not a valid message sequence (SQLSTATE 08P01)."""

    sqlstate = "08P01"


class MessageTooLarge(ProtocolViolation):
    sqlstate = "54000"  # program_limit_exceeded


class ClientGone(Exception):
    """The peer closed the connection."""


CHARACTER_NOT_IN_REPERTOIRE = "22021"


def utf8_error_text(e: UnicodeDecodeError) -> str:
    """PostgreSQL's message for bytes that are not UTF-8 (mbutils.c, report_invalid_encoding):
    the bytes of the offending character, as many as its lead byte announces, cut at the end
    of the string, e.g. ``invalid byte sequence for encoding "UTF8": 0xc3 0x28``."""
    raw = bytes(e.object)
    lead = raw[e.start] if e.start < len(raw) else 0
    width = 2 if lead & 0xE0 == 0xC0 else 3 if lead & 0xF0 == 0xE0 else 4 if lead & 0xF8 == 0xF0 else 1
    shown = raw[e.start:e.start + width]
    return 'invalid byte sequence for encoding "UTF8": ' + " ".join(f"0x{b:02x}" for b in shown)


def decode_utf8(raw: bytes, nul_allowed: bool = True) -> str:
    """`raw` as text, or QueryError 22021 with PostgreSQL's message; a NUL byte is refused
    too where PostgreSQL's encoding check would see it (values, not C strings)."""
    try:
        text = raw.decode()
    except UnicodeDecodeError as e:
        raise QueryError(utf8_error_text(e), CHARACTER_NOT_IN_REPERTOIRE) from None
    if not nul_allowed and "\0" in text:
        raise QueryError('invalid byte sequence for encoding "UTF8": 0x00', CHARACTER_NOT_IN_REPERTOIRE)
    return text


def read_exact(stream: BinaryIO, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) < n:
        raise ClientGone()
    return data


def read_startup(stream: BinaryIO, limit: int = 10_000) -> tuple[int, bytes]:
    """(code, payload) of the untyped first message: startup, SSL, GSS or cancel request."""
    length = _I32.unpack(read_exact(stream, 4))[0]
    if length < 8 or length > limit:
        raise ProtocolViolation(f"invalid startup packet length {length}")
    payload = read_exact(stream, length - 4)
    return _I32.unpack(payload[:4])[0], payload[4:]


def read_message(stream: BinaryIO, limit: int) -> tuple[bytes, bytes]:
    """(type byte, body) of one typed message; bodies over `limit` bytes are refused
    before they are read."""
    head = stream.read(5)
    if not head:
        raise ClientGone()
    if len(head) < 5:
        head += read_exact(stream, 5 - len(head))
    kind, length = head[:1], _I32.unpack(head[1:])[0]
    if length < 4:
        raise ProtocolViolation(f"invalid message length {length} for message type {kind!r}")
    if length - 4 > limit:
        raise MessageTooLarge(f"message of {length - 4} bytes exceeds the limit of {limit} bytes")
    return kind, read_exact(stream, length - 4)


def startup_parameters(payload: bytes) -> dict[str, str]:
    """The name/value pairs of a StartupMessage."""
    parts = payload.split(b"\0")
    if len(parts) < 2 or parts[-1] != b"" or parts[-2] != b"":
        raise ProtocolViolation("invalid startup packet layout: expected terminator as last byte")
    parts = parts[:-2]
    if len(parts) % 2:
        raise ProtocolViolation("invalid startup packet layout: a parameter has no value")
    try:
        return {parts[i].decode(): parts[i + 1].decode() for i in range(0, len(parts), 2)}
    except UnicodeDecodeError:
        raise ProtocolViolation("invalid startup packet: parameters are not UTF-8") from None


class Body:
    """A cursor over one message body."""

    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.data):
            raise ProtocolViolation("message is shorter than its fields")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def count(self, what: str) -> int:
        """A 16-bit count of the fields that follow. A negative one would read as no fields
        and leave the rest of the message misread, so it breaks the framing (PostgreSQL
        reads it as 65535 and runs out of message: 08P01)."""
        n = self.int16()
        if n < 0:
            raise ProtocolViolation(f"invalid message format: negative {what} count {n}")
        return n

    def byte(self) -> bytes:
        return self._take(1)

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise ProtocolViolation("unterminated string in message")
        raw = self.data[self.at:end]
        self.at = end + 1
        return decode_utf8(raw)  # the framing is intact: bad UTF-8 is an ERROR (22021)

    def value(self) -> bytes | None:
        """A length-prefixed value; -1 is NULL."""
        n = self.int32()
        if n == -1:
            return None
        if n < -1:
            raise ProtocolViolation(f"invalid value length {n}")
        return self._take(n)

    def rest(self) -> bytes:
        out = self.data[self.at:]
        self.at = len(self.data)
        return out

    def done(self) -> None:
        if self.at != len(self.data):
            raise ProtocolViolation("message has trailing bytes")


def message(kind: bytes, body: bytes = b"") -> bytes:
    return kind + _I32.pack(len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


class Out:
    """Outgoing messages, buffered until flush()."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, kind: bytes, body: bytes = b"") -> None:
        self.parts.append(message(kind, body))
        self.size += len(body) + 5
        if self.size > (1 << 20):  # a large result is sent as it is produced
            self.flush()

    def raw(self, messages: bytes) -> None:
        """Messages already framed (server/protocol/data_rows.py), sent as they come when large."""
        self.parts.append(messages)
        self.size += len(messages)
        if self.size > (1 << 20):
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.stream.write(b"".join(self.parts))
            self.parts, self.size = [], 0
        self.stream.flush()

    # -- the messages ---------------------------------------------------------------------------
    def auth(self, code: int, extra: bytes = b"") -> None:
        self.add(b"R", _I32.pack(code) + extra)

    def parameter_status(self, name: str, value: str) -> None:
        self.add(b"S", cstr(name) + cstr(value))

    def backend_key(self, pid: int, secret: int) -> None:
        self.add(b"K", _I32.pack(pid) + _I32.pack(secret))

    def ready(self, status: bytes) -> None:
        self.add(b"Z", status)

    def row_description(self, fields: Iterable[tuple[str, int, int, int, int]]) -> None:
        """fields: (name, type oid, type size, type modifier, format code)."""
        fields = list(fields)
        body = [_I16.pack(len(fields))]
        for name, oid, size, modifier, fmt in fields:
            body.append(cstr(name) + struct.pack("!ihihih", 0, 0, oid, size, modifier, fmt))
        self.add(b"T", b"".join(body))

    def data_row(self, values: list[bytes | None]) -> None:
        body = [_I16.pack(len(values))]
        for v in values:
            body.append(b"\xff\xff\xff\xff" if v is None else _I32.pack(len(v)) + v)
        self.add(b"D", b"".join(body))

    def command_complete(self, tag: str) -> None:
        self.add(b"C", cstr(tag))

    def empty_query(self) -> None:
        self.add(b"I")

    def notice_or_error(self, kind: bytes, fields: dict[str, str]) -> None:
        self.add(kind, b"".join(code.encode() + cstr(text) for code, text in fields.items()) + b"\0")

    def parameter_description(self, oids: list[int]) -> None:
        self.add(b"t", _I16.pack(len(oids)) + b"".join(_I32.pack(o) for o in oids))

    def copy_out(self, columns: int, fmt: int = 0) -> None:
        self.add(b"H", bytes([fmt]) + _I16.pack(columns) + b"".join(_I16.pack(fmt) for _ in range(columns)))
