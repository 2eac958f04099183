"""SCRAM-SHA-256 authentication (RFC 5802, RFC 7677), as PostgreSQL does it, and the users
file of salted verifiers it checks against.

The server never sees or stores a password: the users file holds PostgreSQL's verifier
format, ``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>``, and the client
proves it knows the password without sending it. Channel binding is not offered (no
SCRAM-SHA-256-PLUS), so a client asking for it is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

MECHANISM = "SCRAM-SHA-256"
ITERATIONS = 4096
SALT_BYTES = 16

# The secret unknown users' made-up verifiers are derived from (PostgreSQL's mock_auth_nonce):
# made once per process, so a user name's mock salt is stable for as long as the server runs
# and cannot be computed outside it.
_MOCK_SECRET = secrets.token_bytes(32)


class AuthFailed(Exception):
    """Authentication did not succeed; the message is safe to show the client."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def _saslprep(password: str) -> str:
    # Enough of SASLprep (RFC 4013) for real passwords: NFKC and spaces mapped to space.
    # PostgreSQL falls back to the raw bytes where SASLprep fails; so do we.
    mapped = "".join(" " if unicodedata.category(c) == "Zs" else c for c in password)
    return unicodedata.normalize("NFKC", mapped)


@dataclass(frozen=True)
class Verifier:
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    def text(self) -> str:
        return (f"{MECHANISM}${self.iterations}:{_b64(self.salt)}"
                f"${_b64(self.stored_key)}:{_b64(self.server_key)}")

    @staticmethod
    def parse(text: str) -> Verifier:
        try:
            mech, params, keys = text.split("$")
            iterations, salt = params.split(":")
            stored, server = keys.split(":")
            if mech != MECHANISM:
                raise ValueError(mech)
            return Verifier(int(iterations), base64.b64decode(salt), base64.b64decode(stored),
                            base64.b64decode(server))
        except ValueError:
            raise ValueError("not a SCRAM-SHA-256 verifier (SCRAM-SHA-256$iter:salt$stored:server)") from None


def make_verifier(password: str, salt: bytes | None = None, iterations: int = ITERATIONS) -> Verifier:
    salt = salt if salt is not None else secrets.token_bytes(SALT_BYTES)
    salted = hashlib.pbkdf2_hmac("sha256", _saslprep(password).encode(), salt, iterations)
    client_key = _hmac(salted, b"Client Key")
    return Verifier(iterations, salt, hashlib.sha256(client_key).digest(), _hmac(salted, b"Server Key"))


# -- the users file ------------------------------------------------------------------------------

def load_users(path: str | os.PathLike[str]) -> dict[str, Verifier]:
    """``name:verifier`` lines; blank lines and ``#`` comments are ignored."""
    users: dict[str, Verifier] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, verifier = line.partition(":")
        if not sep or not name:
            raise ValueError(f"{path}:{number}: expected name:SCRAM-SHA-256$...")
        try:
            users[name] = Verifier.parse(verifier)
        except ValueError as e:
            raise ValueError(f"{path}:{number}: {e}") from None
    return users


def save_user(path: str | os.PathLike[str], name: str, password: str) -> None:
    """Add or replace a user; the file is rewritten atomically and readable only by its owner."""
    if not name or ":" in name or "\n" in name:
        raise ValueError(f"invalid user name {name!r}")
    target = Path(path)
    users = load_users(target) if target.exists() else {}
    users[name] = make_verifier(password)
    body = "".join(f"{n}:{v.text()}\n" for n, v in sorted(users.items()))
    fd, tmp = tempfile.mkstemp(prefix=".users-", dir=target.parent or ".")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("# penstock users: name:SCRAM-SHA-256 verifier (no passwords)\n" + body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# -- the exchange ---------------------------------------------------------------------------------

def mock_verifier(user: str, secret: bytes = _MOCK_SECRET) -> Verifier:
    """The verifier an unknown user is challenged with, as PostgreSQL's scram_mock_salt and
    mock_scram_secret make it: the salt is a keyed hash of the user name, so every attempt for
    a name sees the same salt and iteration count, as for a real user (a fresh random salt
    each time would tell an attacker the name does not exist), while different names see
    different salts. Its keys match no password; no PBKDF2 runs, as none runs for a real user,
    whose verifier is already stored, so both take the same time."""
    name = user.encode("utf-8", "surrogateescape")
    salt = _hmac(secret, b"salt\0" + name)[:SALT_BYTES]
    return Verifier(ITERATIONS, salt, _hmac(secret, b"stored\0" + name), _hmac(secret, b"server\0" + name))


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise AuthFailed("malformed SCRAM message")
        out[key] = value
    return out


class ScramExchange:
    """The server side of one SCRAM-SHA-256 exchange.

    ``first(client_first) -> server_first``, then ``final(client_final) -> server_final``;
    an unknown user runs the same exchange against a made-up verifier (mock_verifier: stable
    per user name) so that the answer does not reveal which user names exist.
    """

    def __init__(self, verifier: Verifier | None, user: str = "", mock_secret: bytes = _MOCK_SECRET):
        self.known = verifier is not None
        self.verifier = verifier or mock_verifier(user, mock_secret)
        self.nonce = ""
        self.client_first_bare = ""
        self.server_first = ""
        self.gs2_header = ""

    def first(self, client_first: str) -> str:
        if client_first.startswith("p="):
            raise AuthFailed("channel binding is not supported by this server")
        if not (client_first.startswith("n,") or client_first.startswith("y,")):
            raise AuthFailed("malformed SCRAM client-first-message")
        head, sep, bare = client_first.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2:
            raise AuthFailed("malformed SCRAM client-first-message")
        self.gs2_header = f"{head},{authzid},"
        attrs = _attributes(bare)
        if "r" not in attrs or not attrs["r"]:
            raise AuthFailed("SCRAM client-first-message has no nonce")
        self.client_first_bare = bare
        self.nonce = attrs["r"] + base64.b64encode(secrets.token_bytes(18)).decode()
        v = self.verifier
        self.server_first = f"r={self.nonce},s={_b64(v.salt)},i={v.iterations}"
        return self.server_first

    def final(self, client_final: str) -> str:
        without_proof, sep, proof_part = client_final.rpartition(",p=")
        if not sep:
            raise AuthFailed("SCRAM client-final-message has no proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self.nonce:
            raise AuthFailed("SCRAM nonce does not match")
        if attrs.get("c") != _b64(self.gs2_header.encode()):
            raise AuthFailed("SCRAM channel binding does not match")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise AuthFailed("malformed SCRAM proof") from None
        auth_message = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        v = self.verifier
        signature = _hmac(v.stored_key, auth_message)
        if len(proof) != len(signature):
            raise AuthFailed("malformed SCRAM proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        matches = hmac.compare_digest(hashlib.sha256(client_key).digest(), v.stored_key)  # for everyone, alike
        if not (matches and self.known):
            raise AuthFailed("password does not match")
        return "v=" + _b64(_hmac(v.server_key, auth_message))
