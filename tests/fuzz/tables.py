"""Random tables for the fuzzer: a fixed schema, random values, several file formats.

The *schema* never changes (names and types of every column are constants here) while the
*values* come from the seed. That is deliberate: a query shape drawn by the generator is
valid for every seed, and a kernel compiled for it (kernels are cached by source text,
which depends on column types but not on values) serves every later seed too, so a batch
spends its time running queries rather than compiling them.

Values aim at the places engines disagree: NULLs in every column, integer type limits,
-0.0 / NaN / +-inf, empty and non-ASCII text, LIKE metacharacters, dictionary-encoded
text, dates before 1970 and leap days, sub-second timestamps, decimals of precision 5 to
38 with values beyond 18 digits in the wide ones, and join keys with duplicates and NULLs
on both sides. `ta` is written as Parquet with small row groups (several batches per
scan), `tb` as an Arrow IPC file, `tc` is registered in memory, `te` is an empty Parquet
file with `ta`'s schema and `ta_ipc` is `ta` again as Arrow IPC.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Context, Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

ROW_GROUP = 64

# Strings with LIKE metacharacters, quotes, blanks and multi-byte UTF-8 (no characters
# whose case mapping differs between ICU, glibc and Rust, e.g. no 'ß').
EDGE_STRINGS = ["", "a", "A", "ab", "abc", "ABC", "a%b", "50%", "a_b", "_x", "%", "_",
                "a\\b", "O'Brien", " pad ", "  ", "héllo", "HÉLLO", "naïve", "日本語",
                "Ωmega", "zzz", "0", "10", "9", "x-y"]
WORDS = ["alpha", "beta", "gamma", "delta", "eps"]
COLORS = ["red", "green", "", "ünï", "Red", "ye%low", "pu_ple", "blue"]
DATE_EDGES = [dt.date(2000, 2, 29), dt.date(2024, 2, 29), dt.date(1900, 3, 1),
              dt.date(1999, 12, 31), dt.date(1970, 1, 1), dt.date(1969, 12, 31),
              dt.date(1960, 2, 29), dt.date(2038, 1, 19), dt.date(1600, 3, 1)]
TS_EDGES = [dt.datetime(1999, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1),
            dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(2020, 2, 29, 12, 30, 45, 123456),
            dt.datetime(1955, 3, 1, 0, 0, 0, 250000), dt.datetime(2024, 12, 30, 6)]
INT_LIMITS = {8: [-128, 127, -127, 126], 16: [-32768, 32767, -32767],
              32: [-2147483648, 2147483647, -2147483647, 2147483646],
              64: [-9223372036854775808, 9223372036854775807, -9223372036854775807,
                   4611686018427387904, 4611686018427387903]}
FLOAT_SPECIALS = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 5e-324, -5e-324,
                  1.7e308, -1.7e308, 1e-300]


@dataclass(frozen=True)
class ColSpec:
    """One column of the fixed schema: its Arrow type, how values are drawn, and what the
    generator may do with it (`kind` is the generator's type family; `bound` the largest
    magnitude its values can have, or None when it holds type limits / float specials and
    must not feed arithmetic that could overflow)."""

    name: str
    arrow: pa.DataType
    kind: str  # int | float | dec | text | bool | date | ts
    bound: float | None
    draw: Callable[[random.Random], Any] = field(compare=False)
    p_null: float = 0.1
    dictionary: bool = False


def _ints(lo: int, hi: int) -> Callable[[random.Random], int]:
    return lambda r: r.randint(lo, hi)


def _extreme(bits: int, small: int) -> Callable[[random.Random], int]:
    return lambda r: r.choice(INT_LIMITS[bits]) if r.random() < 0.35 else r.randint(-small, small)


def _eighths(lim: int) -> Callable[[random.Random], float]:
    """Multiples of 1/8: sums and products by small powers of two stay exact in binary
    floating point, so engines that add in different orders still agree bit for bit."""
    return lambda r: r.randint(-lim * 8, lim * 8) / 8


def _fspecial(r: random.Random) -> float:
    return r.choice(FLOAT_SPECIALS) if r.random() < 0.45 else r.randint(-800, 800) / 8


def scaled(units: int, scale: int) -> Decimal:
    """units * 10**-scale, exactly (Decimal arithmetic would round to 28 digits)."""
    return Decimal(f"{units}E-{scale}")


def _dec(digits: int, scale: int, wide_digits: int = 0) -> Callable[[random.Random], Decimal]:
    """Decimal with up to `digits` total digits; with `wide_digits`, a third of the values
    have that many digits (beyond the 18 a 64-bit integer holds)."""
    def draw(r: random.Random) -> Decimal:
        n = wide_digits if wide_digits and r.random() < 0.33 else min(digits, r.choice([3, 6, digits]))
        return scaled(r.randint(-(10 ** n - 1), 10 ** n - 1), scale)
    return draw


def _text(pool: list[str]) -> Callable[[random.Random], str]:
    return lambda r: r.choice(EDGE_STRINGS) if r.random() < 0.35 else r.choice(pool)


def _date(r: random.Random) -> dt.date:
    if r.random() < 0.15:
        return r.choice(DATE_EDGES)
    return dt.date(1950, 1, 1) + dt.timedelta(days=r.randint(0, 365 * 80))


def _ts(r: random.Random) -> dt.datetime:
    if r.random() < 0.15:
        return r.choice(TS_EDGES)
    base = dt.datetime(1950, 1, 1) + dt.timedelta(seconds=r.randint(0, 80 * 365 * 86400))
    return base.replace(microsecond=r.choice([0, 0, r.randint(0, 999_999), r.randint(0, 999) * 1000]))


TEXT_POOL = [f"{w}-{i}" for w in WORDS for i in range(6)]

TA_COLUMNS: list[ColSpec] = [
    ColSpec("id", pa.int64(), "int", 10**6, _ints(0, 10**6), 0.02),
    ColSpec("k", pa.int32(), "int", 9, _ints(0, 9), 0.08),
    ColSpec("g", pa.int16(), "int", 4, _ints(0, 4), 0.1),
    ColSpec("i8", pa.int8(), "int", 100, _ints(-100, 100)),
    ColSpec("i16", pa.int16(), "int", 10_000, _ints(-10_000, 10_000)),
    ColSpec("i32", pa.int32(), "int", 1_000_000, _ints(-1_000_000, 1_000_000)),
    ColSpec("i64", pa.int64(), "int", 10**12, _ints(-10**12, 10**12), 0.2),
    ColSpec("x8", pa.int8(), "int", None, _extreme(8, 10)),
    ColSpec("x16", pa.int16(), "int", None, _extreme(16, 1000)),
    ColSpec("x32", pa.int32(), "int", None, _extreme(32, 10**6)),
    ColSpec("x64", pa.int64(), "int", None, _extreme(64, 10**9)),
    ColSpec("f32", pa.float32(), "float", 1000.0, _eighths(1000)),
    ColSpec("f64", pa.float64(), "float", 1e6, _eighths(10**6), 0.15),
    ColSpec("fx", pa.float64(), "float", None, _fspecial),
    ColSpec("d5", pa.decimal128(5, 2), "dec", 1e3, _dec(5, 2)),
    ColSpec("d18", pa.decimal128(18, 4), "dec", 1e14, _dec(18, 4)),
    ColSpec("d38", pa.decimal128(38, 8), "dec", 1e27, _dec(14, 8, wide_digits=34)),
    ColSpec("d38z", pa.decimal128(38, 0), "dec", 1e28, _dec(12, 0, wide_digits=28)),
    ColSpec("s", pa.string(), "text", None, _text(TEXT_POOL), 0.12),
    ColSpec("sd", pa.string(), "text", None, lambda r: r.choice(COLORS), 0.1, dictionary=True),
    ColSpec("dt", pa.date32(), "date", None, _date),
    ColSpec("ts", pa.timestamp("us"), "ts", None, _ts),
    ColSpec("b", pa.bool_(), "bool", None, lambda r: r.random() < 0.5, 0.2),
]

TB_COLUMNS: list[ColSpec] = [
    ColSpec("id", pa.int64(), "int", 10**6, _ints(0, 10**6), 0.02),
    ColSpec("k", pa.int32(), "int", 14, _ints(4, 14), 0.1),
    ColSpec("i16", pa.int16(), "int", 10_000, _ints(-10_000, 10_000)),
    ColSpec("i64", pa.int64(), "int", 10**12, _ints(-10**12, 10**12)),
    ColSpec("f64", pa.float64(), "float", 1e6, _eighths(10**6)),
    ColSpec("d12", pa.decimal128(12, 2), "dec", 1e10, _dec(12, 2)),
    ColSpec("d38", pa.decimal128(38, 8), "dec", 1e27, _dec(12, 8, wide_digits=33)),
    ColSpec("s", pa.string(), "text", None, _text(TEXT_POOL[:12]), 0.12),
    ColSpec("sd", pa.string(), "text", None, lambda r: r.choice(COLORS[:5]), 0.1, dictionary=True),
    ColSpec("dt", pa.date32(), "date", None, _date),
    ColSpec("tsm", pa.timestamp("ms"), "ts", None, lambda r: _ts(r).replace(microsecond=0)),
    ColSpec("b", pa.bool_(), "bool", None, lambda r: r.random() < 0.5, 0.2),
]

TC_COLUMNS: list[ColSpec] = [
    ColSpec("k", pa.int32(), "int", 20, _ints(0, 20), 0.1),
    ColSpec("i32", pa.int32(), "int", 1_000_000, _ints(-1_000_000, 1_000_000)),
    ColSpec("f64", pa.float64(), "float", 1e6, _eighths(10**6)),
    ColSpec("d5", pa.decimal128(5, 2), "dec", 1e3, _dec(5, 2)),
    ColSpec("s", pa.string(), "text", None, _text(TEXT_POOL[:8]), 0.15),
    ColSpec("dt", pa.date32(), "date", None, _date),
    ColSpec("b", pa.bool_(), "bool", None, lambda r: r.random() < 0.5, 0.2),
]

F32_SPECIALS = [float("nan"), float("inf"), float("-inf"), -0.0, 3.4028234663852886e38, -3.4028234663852886e38,
                1.401298464324817e-45, 1.1754943508222875e-38]
DATE_LIMITS = [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1677, 9, 21), dt.date(2262, 4, 11),
               dt.date(1582, 10, 15), dt.date(1, 12, 31)]
TS_LIMITS = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
             dt.datetime(1677, 9, 21, 0, 12, 43, 145225), dt.datetime(2262, 4, 11, 23, 47, 16, 854775)]
N38 = 10**38 - 1

# More of `ta`'s columns, drawn from a stream of their own so that the columns above keep
# the values they always had (the DuckDB batch's queries and answers stay the same):
# `rid` numbers the rows (a unique, never NULL key: windows order by it last so that
# row_number, lag, ROWS frames... have one answer); the others hold values at the limits
# of real, numeric(38,0), date and timestamp (generator class "limit_columns").
TA_EXTRA: list[ColSpec] = [
    ColSpec("rid", pa.int32(), "int", 10_000, lambda r: 0, 0.0),
    ColSpec("xf4", pa.float32(), "float", None,
            lambda r: r.choice(F32_SPECIALS) if r.random() < 0.5 else r.randint(-800, 800) / 8),
    ColSpec("xn", pa.decimal128(38, 0), "dec", None,
            lambda r: Decimal(r.choice([N38, -N38, N38 - 1, 10**37, 0])) if r.random() < 0.5
            else Decimal(r.randint(-10**6, 10**6))),
    ColSpec("xdt", pa.date32(), "date", None, lambda r: r.choice(DATE_LIMITS) if r.random() < 0.4 else _date(r)),
    ColSpec("xts", pa.timestamp("us"), "ts", None, lambda r: r.choice(TS_LIMITS) if r.random() < 0.4 else _ts(r)),
]
LIMIT_COLUMNS = frozenset(c.name for c in TA_EXTRA[1:])

SCHEMAS: dict[str, list[ColSpec]] = {"ta": TA_COLUMNS + TA_EXTRA, "tb": TB_COLUMNS, "tc": TC_COLUMNS}
ROWS = {"ta": 300, "tb": 120, "tc": 24}
FORMATS = {"ta": "parquet", "tb": "arrow", "tc": "memory", "te": "parquet", "ta_ipc": "arrow"}
BASE_OF = {"ta": "ta", "tb": "tb", "tc": "tc", "te": "ta", "ta_ipc": "ta"}


@dataclass
class Dataset:
    """The tables of one seed: pyarrow tables by registered name, and how each is stored."""

    tables: dict[str, pa.Table]
    formats: dict[str, str]
    paths: dict[str, Path] = field(default_factory=dict)

    def columns(self, name: str) -> list[ColSpec]:
        return SCHEMAS[BASE_OF[name]]


def _column(spec: ColSpec, rng: random.Random, n: int) -> pa.Array:
    # Row 0 is NULL in every column, so even a small table has a NULL everywhere.
    values = [None if i == 0 or rng.random() < spec.p_null else spec.draw(rng) for i in range(n)]
    arr = pa.array(values, spec.arrow)
    if spec.dictionary:
        arr = arr.dictionary_encode().cast(pa.dictionary(pa.int32(), pa.string()))
    return arr


def make_table(specs: list[ColSpec], rng: random.Random, n: int) -> pa.Table:
    return pa.table({s.name: _column(s, rng, n) for s in specs})


def build(seed: int, avoid: frozenset[str] = frozenset()) -> dict[str, pa.Table]:
    """The pyarrow tables of `seed` (deterministic: Python's Random stream is stable).

    `avoid` tames values behind bugs already found, so that exploratory runs find others:
    "early_dates" moves 1600-03-01 (outside timestamp[ns]) to 1700-03-01; "wide_decimals"
    shrinks decimal values beyond 18 digits. The batch avoids nothing."""
    rng = random.Random(f"penstock-fuzz-tables-{seed}")
    ta = make_table(TA_COLUMNS, rng, ROWS["ta"])
    extra = make_table(TA_EXTRA, random.Random(f"penstock-fuzz-limits-{seed}"), ROWS["ta"])
    extra = extra.set_column(0, "rid", pa.array(range(ROWS["ta"]), pa.int32()))
    for name in extra.column_names:
        ta = ta.append_column(name, extra.column(name))
    tb = make_table(TB_COLUMNS, rng, ROWS["tb"])
    tc = make_table(TC_COLUMNS, rng, ROWS["tc"])
    ta, tb, tc = (_tame(t, avoid) for t in (ta, tb, tc))
    return {"ta": ta, "tb": tb, "tc": tc, "te": ta.slice(0, 0), "ta_ipc": ta}


def _narrow(v: Decimal | None, scale: int) -> Decimal | None:
    if v is None:
        return v
    units = int(v.scaleb(scale, context=Context(prec=100)))
    while abs(units) >= 10**18:
        units //= 10**6
    return scaled(units, scale)


def _tame(table: pa.Table, avoid: frozenset[str]) -> pa.Table:
    for i, f in enumerate(table.schema):
        values = table.column(i).to_pylist()
        if "early_dates" in avoid and pa.types.is_date(f.type):
            values = [dt.date(1700, 3, 1) if v is not None and v.year < 1678 else v for v in values]
        elif "wide_decimals" in avoid and pa.types.is_decimal(f.type):
            values = [_narrow(v, f.type.scale) for v in values]
        else:
            continue
        table = table.set_column(i, f.name, pa.array(values, f.type))
    return table


def write(tables: dict[str, pa.Table], directory: Path,
          formats: dict[str, str] | None = None) -> Dataset:
    """Write each table in its format under `directory` (memory tables are not written)."""
    formats = dict(formats or FORMATS)
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name, table in tables.items():
        fmt = formats.get(name, "parquet")
        if fmt == "parquet":
            paths[name] = directory / f"{name}.parquet"
            pq.write_table(table, paths[name], row_group_size=ROW_GROUP)
        elif fmt == "arrow":
            paths[name] = directory / f"{name}.arrow"
            feather.write_feather(table, paths[name], compression="uncompressed", chunksize=ROW_GROUP)
        formats[name] = fmt
    return Dataset(dict(tables), formats, paths)


def generate(seed: int, directory: Path, avoid: frozenset[str] = frozenset()) -> Dataset:
    return write(build(seed, avoid), directory)
