"""Messages no well-behaved driver sends, answered as PostgreSQL 15 answers them: probes for
which user names exist (SCRAM mock salts), bytes that are not UTF-8, binary parameters out of
range or malformed, and negative counts in Parse and Bind. The expected SQLSTATEs and
messages are those a PostgreSQL 15 server gave for the same bytes."""

from __future__ import annotations

import base64
import struct
from typing import Iterator

import psycopg
import pytest

from penstock.server.protocol.params import numeric_from_binary
from penstock.server.protocol.scram import ITERATIONS, AuthFailed, ScramExchange, load_users, save_user
from penstock.server.protocol.wire import PROTOCOL_3, utf8_error_text
from server.conftest import Running, start_server, stop_server
from server.rawclient import Raw, errors, rows


def cs(text: bytes) -> bytes:
    return text + b"\0"


def parse(c: Raw, sql: bytes, oids: tuple[int, ...] = (), name: bytes = b"") -> None:
    c.message(b"P", cs(name) + cs(sql) + struct.pack("!h", len(oids)) + b"".join(struct.pack("!i", o) for o in oids))


def bind(c: Raw, values: list[bytes | None], formats: tuple[int, ...] = (1,), portal: bytes = b"",
         statement: bytes = b"") -> None:
    body = cs(portal) + cs(statement) + struct.pack("!h", len(formats)) + b"".join(struct.pack("!h", f) for f in formats)
    body += struct.pack("!h", len(values))
    body += b"".join(b"\xff\xff\xff\xff" if v is None else struct.pack("!i", len(v)) + v for v in values)
    c.message(b"B", body + struct.pack("!h", 0))


def execute_sync(c: Raw) -> list[tuple[bytes, bytes]]:
    c.message(b"E", cs(b"") + struct.pack("!i", 0))
    c.message(b"S")
    return c.until_ready()


def one_error(got: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The one ERROR (not FATAL) of an exchange that ended ready for more (Z)."""
    found = errors(got)
    assert len(found) == 1 and found[0]["S"] == "ERROR", got
    assert got[-1][0] == b"Z", got
    return found[0]


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A bare server (trust on loopback, no tables): these tests need none."""
    running = start_server(tmp_path_factory.mktemp("hostile"))
    yield running
    stop_server(running)


def still_serving(server: Running) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("select 1").fetchone() == (1,)


# -- SCRAM: unknown users look like real ones -----------------------------------------------------

@pytest.fixture(scope="module")
def scram_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    data = tmp_path_factory.mktemp("scram-mock")
    save_user(data / "users", "alice", "s3cret")
    running = start_server(data, auth="scram", users_file=str(data / "users"))
    yield running
    stop_server(running)


def server_first(port: int, user: str) -> dict[str, str]:
    """The attributes of the server-first-message a SCRAM login for `user` is sent."""
    c = Raw(port, startup=False)
    body = struct.pack("!i", PROTOCOL_3) + cs(b"user") + cs(user.encode()) + cs(b"database") + cs(b"penstock") + b"\0"
    c.send(struct.pack("!i", len(body) + 4) + body)
    kind, sasl = c.read() or (b"", b"")
    assert kind == b"R" and struct.unpack("!i", sasl[:4])[0] == 10 and b"SCRAM-SHA-256" in sasl
    first = b"n,,n=,r=clientnonce123"
    c.message(b"p", cs(b"SCRAM-SHA-256") + struct.pack("!i", len(first)) + first)
    kind, cont = c.read() or (b"", b"")
    c.close()
    assert kind == b"R" and struct.unpack("!i", cont[:4])[0] == 11
    return dict(part.split("=", 1) for part in cont[4:].decode().split(","))  # type: ignore[misc]


def test_unknown_user_sees_the_same_salt_every_time(scram_server: Running) -> None:
    one, two = server_first(scram_server.port, "mallory"), server_first(scram_server.port, "mallory")
    assert one["s"] == two["s"] and one["i"] == two["i"] == str(ITERATIONS)
    assert one["r"] != two["r"]  # the server's part of the nonce is fresh each time
    assert len(base64.b64decode(one["s"])) == 16  # as long as a real salt


def test_real_user_is_sent_its_verifiers_salt(scram_server: Running) -> None:
    alice = load_users(scram_server.data / "users")["alice"]
    got = server_first(scram_server.port, "alice")
    assert base64.b64decode(got["s"]) == alice.salt and got["i"] == str(alice.iterations)
    assert server_first(scram_server.port, "alice")["s"] == got["s"]


def test_unknown_users_see_different_salts(scram_server: Running) -> None:
    mallory = server_first(scram_server.port, "mallory")["s"]
    assert server_first(scram_server.port, "mallory")["s"] == mallory != server_first(scram_server.port, "trudy")["s"]


def test_mock_salt_is_per_user_name_and_per_secret() -> None:
    def salt(user: str, secret: bytes) -> str:
        return ScramExchange(None, user=user, mock_secret=secret).first("n,,n=,r=abc").split(",")[1]

    assert salt("mallory", b"k1") == salt("mallory", b"k1")
    assert salt("mallory", b"k1") != salt("trudy", b"k1")
    assert salt("mallory", b"k1") != salt("mallory", b"k2")  # not computable without the server's secret
    assert ScramExchange(None, user="mallory").first("n,,n=,r=abc").endswith(f",i={ITERATIONS}")


def test_mock_verifier_matches_no_proof() -> None:
    ex = ScramExchange(None, user="mallory")
    server_first_message = ex.first("n,,n=,r=abc")
    nonce = server_first_message.split(",")[0][2:]
    proof = base64.b64encode(bytes(32)).decode()
    with pytest.raises(AuthFailed, match="password does not match"):
        ex.final(f"c=biws,r={nonce},p={proof}")


def test_unknown_user_is_refused_like_a_wrong_password(scram_server: Running) -> None:
    for user in ("mallory", "mallory", "alice"):
        with pytest.raises(psycopg.OperationalError, match=f'password authentication failed for user "{user}"'):
            psycopg.connect(f"host=127.0.0.1 port={scram_server.port} user={user} password=wrong dbname=penstock")
    with psycopg.connect(f"host=127.0.0.1 port={scram_server.port} user=alice password=s3cret dbname=penstock") as c:
        assert c.execute("select 1").fetchone() == (1,)


# -- bytes that are not UTF-8 -----------------------------------------------------------------------

@pytest.mark.parametrize("raw,shown", [
    (b"SELECT '\xc3\x28'", "0xc3 0x28"), (b"\xe2\x82", "0xe2 0x82"), (b"SELECT 'a\xff\xfe'", "0xff"),
    (b"SELECT 'a\xf0\x9f\x98'", "0xf0 0x9f 0x98 0x27"), (b"SELECT 'a\xed\xa0\x80'", "0xed 0xa0 0x80"),
])
def test_utf8_error_text_is_postgresqls(raw: bytes, shown: str) -> None:
    with pytest.raises(UnicodeDecodeError) as info:
        raw.decode()
    assert utf8_error_text(info.value) == f'invalid byte sequence for encoding "UTF8": {shown}'


def test_parse_with_invalid_utf8_is_an_error_and_the_session_goes_on(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    parse(c, b"SELECT '\xc3\x28'")
    c.message(b"S")
    e = one_error(c.until_ready())
    assert e["C"] == "22021" and e["M"] == 'invalid byte sequence for encoding "UTF8": 0xc3 0x28'
    assert rows(c.query("SELECT 1")) == [["1"]]
    c.close()


@pytest.mark.parametrize("kind,body", [
    (b"P", b"\xe2\x82\0SELECT 1\0\0\0"), (b"B", b"\xc3\x28\0\0\0\0\0\0\0\0"), (b"B", b"\0\xc3\x28\0\0\0\0\0\0\0"),
    (b"D", b"S\xc3\x28\0"), (b"D", b"P\xc3\x28\0"), (b"E", b"\xc3\x28\0\0\0\0\0"), (b"C", b"S\xc3\x28\0"),
])
def test_names_that_are_not_utf8(pg_server: Running, kind: bytes, body: bytes) -> None:
    c = Raw(pg_server.port)
    c.message(kind, body)
    c.message(b"S")
    assert one_error(c.until_ready())["C"] == "22021"
    assert rows(c.query("SELECT 1")) == [["1"]]
    c.close()


def test_framing_errors_stay_protocol_violations(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    c.message(b"P", b"\0SELECT '\xc3\x28'")  # no terminator
    got = c.until_ready()
    assert errors(got)[0]["C"] == "08P01" and errors(got)[0]["S"] == "FATAL"
    assert c.closed()


def test_simple_query_with_invalid_utf8_goes_on(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    c.message(b"Q", b"SELECT '\xc3\x28'\0")
    assert one_error(c.until_ready())["C"] == "22021"
    assert rows(c.query("SELECT 1")) == [["1"]]
    c.close()


def test_simple_query_with_invalid_utf8_says_what_postgresql_says(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    c.message(b"Q", b"SELECT '\xc3\x28'\0")
    assert one_error(c.until_ready())["M"] == 'invalid byte sequence for encoding "UTF8": 0xc3 0x28'
    c.close()


@pytest.mark.parametrize("value,fmt,shown", [(b"\xc3\x28", 0, "0xc3 0x28"), (b"a\0b", 0, "0x00"),
                                             (b"\xff", 1, "0xff"), (b"a\0", 1, "0x00")])
def test_text_parameters_that_are_not_utf8(pg_server: Running, value: bytes, fmt: int, shown: str) -> None:
    c = Raw(pg_server.port)
    parse(c, b"SELECT $1", (25,))
    bind(c, [value], (fmt,))
    e = one_error(execute_sync(c))
    assert e["C"] == "22021" and e["M"].endswith(f'invalid byte sequence for encoding "UTF8": {shown}')
    c.close()


# -- binary parameters: out of range, malformed -----------------------------------------------------

DATE, TIMESTAMP, TIMESTAMPTZ, NUMERIC = 1082, 1114, 1184, 1700
INT2, INT4, INT8, FLOAT4, FLOAT8, BOOL = 21, 23, 20, 700, 701, 16


def numeric(ndigits: int, weight: int, sign: int, dscale: int, *digits: int) -> bytes:
    return struct.pack(f"!hhHh{len(digits)}h", ndigits, weight, sign, dscale, *digits)


BAD_BINARY = [
    ("date infinity", DATE, struct.pack("!i", 2**31 - 1), "0A000", 'date "infinity" is not supported'),
    ("date -infinity", DATE, struct.pack("!i", -2**31), "0A000", 'date "-infinity" is not supported'),
    ("date past postgres", DATE, struct.pack("!i", 2**31 - 2), "22008", "date out of range"),
    ("date before postgres", DATE, struct.pack("!i", -3_000_000), "22008", "date out of range"),
    ("date past penstock", DATE, struct.pack("!i", 3_000_000), "22008", "date out of range"),
    ("timestamp infinity", TIMESTAMP, struct.pack("!q", 2**63 - 1), "0A000", '"infinity" is not supported'),
    ("timestamp -infinity", TIMESTAMP, struct.pack("!q", -2**63), "0A000", '"-infinity" is not supported'),
    ("timestamp past postgres", TIMESTAMP, struct.pack("!q", 2**63 - 2), "22008", "timestamp out of range"),
    ("timestamptz past penstock", TIMESTAMPTZ, struct.pack("!q", 2**62), "22008", "timestamp out of range"),
    ("numeric huge weight", NUMERIC, numeric(1, 32767, 0, 0, 1), "22003", "numeric field overflow"),
    ("numeric 39 digits", NUMERIC, numeric(1, 9, 0, 0, 100), "22003", "numeric field overflow"),
    ("numeric NaN", NUMERIC, numeric(0, 0, 0xC000, 0), "0A000", 'numeric "NaN" is not supported'),
    ("numeric Infinity", NUMERIC, numeric(0, 0, 0xD000, 0), "0A000", 'numeric "Infinity" is not supported'),
    ("numeric -Infinity", NUMERIC, numeric(0, 0, 0xF000, 0), "0A000", 'numeric "-Infinity" is not supported'),
    ("numeric sign", NUMERIC, numeric(0, 0, 0x1234, 0), "22P03", 'invalid sign in external "numeric" value'),
    ("numeric scale", NUMERIC, numeric(0, 0, 0, 0x4000), "22P03", 'invalid scale in external "numeric" value'),
    ("numeric digit", NUMERIC, numeric(1, 0, 0, 0, 10000), "22P03", 'invalid digit in external "numeric" value'),
    ("numeric negative digit", NUMERIC, numeric(1, 0, 0, 0, -1), "22P03", "invalid digit in external"),
    ("numeric trailing", NUMERIC, numeric(1, 0, 0, 0, 5, 7), "22P03", "incorrect binary data format in bind parameter 1"),
    ("numeric short", NUMERIC, numeric(2, 0, 0, 0, 5), "08P01", "insufficient data left in message"),
    ("int2 long", INT2, b"\0" * 4, "22P03", "incorrect binary data format in bind parameter 1"),
    ("int4 long", INT4, b"\0" * 8, "22P03", "incorrect binary data format in bind parameter 1"),
    ("int8 long", INT8, b"\0" * 9, "22P03", "incorrect binary data format in bind parameter 1"),
    ("float4 long", FLOAT4, b"\0" * 8, "22P03", "incorrect binary data format in bind parameter 1"),
    ("float8 long", FLOAT8, b"\0" * 9, "22P03", "incorrect binary data format in bind parameter 1"),
    ("bool long", BOOL, b"\0" * 2, "22P03", "incorrect binary data format in bind parameter 1"),
    ("date long", DATE, b"\0" * 5, "22P03", "incorrect binary data format in bind parameter 1"),
    ("int4 short", INT4, b"\0" * 3, "08P01", "insufficient data left in message"),  # as PostgreSQL says
    ("float8 short", FLOAT8, b"\0" * 4, "08P01", "insufficient data left in message"),
]


@pytest.mark.parametrize("oid,value,sqlstate,text", [case[1:] for case in BAD_BINARY], ids=[c[0] for c in BAD_BINARY])
def test_bad_binary_parameter(pg_server: Running, oid: int, value: bytes, sqlstate: str, text: str) -> None:
    c = Raw(pg_server.port)
    parse(c, b"SELECT $1", (oid,))
    bind(c, [value])
    e = one_error(execute_sync(c))
    assert (e["C"], text in e["M"]) == (sqlstate, True), e
    assert rows(c.query("SELECT 1")) == [["1"]]  # the same connection goes on
    c.close()


def test_bad_binary_parameter_is_named_by_its_number(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    parse(c, b"SELECT $1, $2", (INT4, DATE))
    bind(c, [struct.pack("!i", 7), struct.pack("!i", 2**31 - 2)])
    assert one_error(execute_sync(c))["M"] == "parameter $2: date out of range"
    parse(c, b"SELECT $1, $2", (INT4, INT4))
    bind(c, [struct.pack("!i", 7), b"\0" * 6])
    assert one_error(execute_sync(c))["M"] == "incorrect binary data format in bind parameter 2"
    c.close()


def test_good_binary_parameters_still_bind(pg_server: Running) -> None:
    c = Raw(pg_server.port)
    parse(c, b"SELECT $1, $2, $3", (DATE, NUMERIC, NUMERIC))
    bind(c, [struct.pack("!i", 0), numeric(2, 0, 0x4000, 2, 1, 5678), numeric(1, 1, 0, 0, 12)])
    assert rows(execute_sync(c)) == [["2000-01-01", "-1.56", "120000"]]  # hidden digits are cut, not rounded
    c.close()


def test_numeric_from_binary_reads_what_postgresql_writes() -> None:
    assert str(numeric_from_binary(numeric(2, 0, 0, 4, 1234, 5000))) == "1234.5000"
    assert str(numeric_from_binary(numeric(0, 0, 0, 2))) == "0.00"
    assert str(numeric_from_binary(numeric(1, -1, 0, 4, 1))) == "0.0001"
    assert str(numeric_from_binary(numeric(1, -32768, 0, 0, 1))) == "0"


# -- negative counts ----------------------------------------------------------------------------

@pytest.mark.parametrize("messages", [
    [(b"P", b"\0SELECT 1\0\xff\xff")],
    [(b"P", b"\0SELECT 1\0\0\0"), (b"B", b"\0\0\xff\xff\0\0\0\0")],
    [(b"P", b"\0SELECT 1\0\0\0"), (b"B", b"\0\0\0\0\xff\xff\0\0")],
    [(b"P", b"\0SELECT 1\0\0\0"), (b"B", b"\0\0\0\0\0\0\xff\xff")],
    [(b"P", b"\0SELECT $1\0\0\x01\0\0\0\x17"), (b"B", b"\0\0\0\x01\0\x01\xff\xfe\0\0\0\x04\0\0\0\x01\0\0")],
], ids=["parse parameter types", "bind formats", "bind parameters", "bind result formats", "bind -2"])
def test_negative_counts_are_protocol_violations(pg_server: Running, messages: list[tuple[bytes, bytes]]) -> None:
    c = Raw(pg_server.port)
    for kind, body in messages:
        c.message(kind, body)
    c.message(b"S")
    got = c.until_ready()
    fatal = [e for e in errors(got) if e["S"] == "FATAL"]
    assert fatal and fatal[0]["C"] == "08P01" and "negative" in fatal[0]["M"], got
    assert c.closed()
    still_serving(pg_server)

