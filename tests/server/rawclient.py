"""A minimal PostgreSQL protocol client over a raw socket, for tests that must send what
no well-behaved driver sends (garbage, truncated and oversize messages) or look at the
exact messages the server answers with."""

from __future__ import annotations

import socket
import struct

from penstock.server.protocol.wire import PROTOCOL_3, SSL_REQUEST


class Raw:
    def __init__(self, port: int, startup: bool = True, user: str = "tester"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        if startup:
            self.startup(user)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def startup(self, user: str = "tester") -> list[tuple[bytes, bytes]]:
        body = struct.pack("!i", PROTOCOL_3) + b"user\0" + user.encode() + b"\0database\0penstock\0\0"
        self.send(struct.pack("!i", len(body) + 4) + body)
        return self.until_ready()

    def ssl_request(self) -> bytes:
        self.send(struct.pack("!ii", 8, SSL_REQUEST))
        return self.sock.recv(1)

    def message(self, kind: bytes, body: bytes = b"") -> None:
        self.send(kind + struct.pack("!i", len(body) + 4) + body)

    def query(self, sql: str) -> list[tuple[bytes, bytes]]:
        self.message(b"Q", sql.encode() + b"\0")
        return self.until_ready()

    def read(self) -> tuple[bytes, bytes] | None:
        """One message, or None when the server closed the connection."""
        head = self._exact(5)
        if head is None:
            return None
        length = struct.unpack("!i", head[1:])[0]
        body = self._exact(length - 4)
        return (head[:1], body or b"")

    def until_ready(self) -> list[tuple[bytes, bytes]]:
        out = []
        while True:
            m = self.read()
            if m is None:
                return out
            out.append(m)
            if m[0] in (b"Z",):
                return out
            if m[0] == b"E" and b"SFATAL" in m[1]:
                return out

    def closed(self) -> bool:
        """True when the server has closed the connection (after what it sent is read)."""
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def _exact(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def error_fields(body: bytes) -> dict[str, str]:
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[part[:1].decode()] = part[1:].decode()
    return out


def errors(messages: list[tuple[bytes, bytes]]) -> list[dict[str, str]]:
    return [error_fields(b) for k, b in messages if k == b"E"]


def rows(messages: list[tuple[bytes, bytes]]) -> list[list[str | None]]:
    out = []
    for kind, body in messages:
        if kind != b"D":
            continue
        n = struct.unpack("!h", body[:2])[0]
        at, row = 2, []
        for _ in range(n):
            length = struct.unpack("!i", body[at:at + 4])[0]
            at += 4
            if length < 0:
                row.append(None)
            else:
                row.append(body[at:at + length].decode())
                at += length
        out.append(row)
    return out


def tags(messages: list[tuple[bytes, bytes]]) -> list[str]:
    return [b.rstrip(b"\0").decode() for k, b in messages if k == b"C"]
