"""Deterministic generator of the differential-test tables.

Both engines read the very same files, so the values only need to be reproducible (for
stable failure reports), not "realistic". They are chosen to hit the places where engines
differ: NULLs at several densities in every column, an all-NULL and a no-NULL column,
zeros and negatives, values at the limits of their types (in columns the corpus only
compares, never sums), empty strings and LIKE metacharacters, non-ASCII UTF-8, leap days,
dates and timestamps before 1970, sub-second timestamps. Parquet row groups hold 1000 rows
so that every large table spans several row groups and batches.

Python's `random.Random` is used rather than numpy's generators because its stream for
`random()` is stable across versions.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq

SEED = 20240229
ROW_GROUP = 1000
WIDE_ROWS = 4000
FACT_ROWS = 6000

EPOCH = dt.date(1970, 1, 1)

# Strings chosen for LIKE metacharacters, quoting, whitespace, and multi-byte UTF-8.
# No 'ß' or other characters whose upper/lower case mapping differs between ICU, glibc
# and Rust (PostgreSQL's result would depend on the server's locale).
EDGE_STRINGS = [
    "", "a", "A", "abc", "ABC", "Abc", "a%b", "50%", "100%", "a_b", "_x", "x_", "%", "_",
    "a\\b", "back\\slash", "O'Brien", " padded ", "  ", "tab\there", "héllo", "HÉLLO",
    "naïve", "日本語", "Ωmega", "emoji 🙂", "zzz", "~tilde", "0", "00", "10", "9",
]
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
COLORS = ["red", "green", "blue", "", "ünïcode", "Red", "yellow%", "pur_ple"]
REGIONS = ["AMERICA", "ASIA", "EUROPE", "AFRICA", "MIDDLE EAST"]
NATIONS = ["BRAZIL", "CANADA", "CHINA", "INDIA", "FRANCE", "GERMANY", "EGYPT", "KENYA", "IRAN", "IRAQ"]

DATE_EDGES = [
    dt.date(2000, 2, 29), dt.date(2020, 2, 29), dt.date(2024, 2, 29), dt.date(1996, 2, 29),
    dt.date(1999, 12, 31), dt.date(2000, 1, 1), dt.date(1970, 1, 1), dt.date(1969, 12, 31),
    dt.date(1965, 6, 15), dt.date(2021, 1, 1), dt.date(2020, 12, 31), dt.date(2027, 1, 3),
]
TS_EDGES = [
    dt.datetime(1999, 12, 31, 23, 59, 59, 999999), dt.datetime(2000, 1, 1, 0, 0, 0),
    dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(1970, 1, 1, 0, 0, 0, 1),
    dt.datetime(2020, 2, 29, 12, 30, 45, 123456), dt.datetime(2024, 12, 30, 6, 0, 0),
    dt.datetime(1965, 3, 1, 0, 0, 0, 250000), dt.datetime(2021, 1, 3, 23, 0, 0, 999),
]
I8_LIMITS = [-128, 127, -127, 126, 0, 1, -1]
I16_LIMITS = [-32768, 32767, -32767, 0, 1, -1]
I32_LIMITS = [-2147483648, 2147483647, -2147483647, 2147483646, 0, 1, -1]
I64_LIMITS = [-9223372036854775808, 9223372036854775807, -9223372036854775807, 0, 1, -1,
              4611686018427387904]
F64_LIMITS = [1.7e308, -1.7e308, 5e-324, -5e-324, 1e-300, 1e300, 0.0, 1.0, -1.0]
D18_LIMITS = [Decimal("99999999999999.9999"), Decimal("-99999999999999.9999"),
              Decimal("0.0001"), Decimal("-0.0001"), Decimal("0.0000")]


@dataclass(frozen=True)
class TableFiles:
    """Where one logical table was written; `path` is what gets registered."""

    name: str
    path: Path
    fmt: str  # "parquet" | "arrow" | "csv" | "memory"
    schema: pa.Schema = field(compare=False)  # of the data as written
    table: pa.Table | None = field(default=None, compare=False)  # only for "memory"


def _maybe(rng: random.Random, p_null: float, make: Callable[[], Any]) -> Any:
    return None if rng.random() < p_null else make()


def _column(rng: random.Random, n: int, p_null: float, make: Callable[[], Any]) -> list[Any]:
    return [_maybe(rng, p_null, make) for _ in range(n)]


def _pick(rng: random.Random, values: list[Any]) -> Callable[[], Any]:
    return lambda: values[rng.randrange(len(values))]


def _date(rng: random.Random) -> dt.date:
    if rng.random() < 0.08:
        return DATE_EDGES[rng.randrange(len(DATE_EDGES))]
    return dt.date(1992, 1, 1) + dt.timedelta(days=rng.randrange(0, 14245))  # to 2030


def _ts(rng: random.Random) -> dt.datetime:
    if rng.random() < 0.08:
        return TS_EDGES[rng.randrange(len(TS_EDGES))]
    base = dt.datetime(1965, 1, 1) + dt.timedelta(seconds=rng.randrange(0, 70 * 365 * 86400))
    micro = rng.choice([0, 0, rng.randrange(1_000_000), rng.randrange(1000) * 1000])
    return base.replace(microsecond=micro)


def _string(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return EDGE_STRINGS[rng.randrange(len(EDGE_STRINGS))]
    return f"{WORDS[rng.randrange(len(WORDS))]}-{rng.randrange(1000):03d}"


def _float(rng: random.Random, lo: float, hi: float, digits: int) -> float:
    if rng.random() < 0.05:
        return rng.choice([0.0, 1.5, -2.25, 0.125])
    return round(rng.uniform(lo, hi), digits)


def _decimal(rng: random.Random, max_units: int, scale: int) -> Decimal:
    units = rng.randrange(-max_units, max_units + 1) if rng.random() > 0.05 else 0
    return Decimal(units).scaleb(-scale)


def wide_table(rng: random.Random, n: int = WIDE_ROWS) -> pa.Table:
    """The table with every type; `id` is the no-NULL unique key, `nul`/`nuls` are all NULL."""
    small_i32_pool = [rng.randrange(-1_000_000, 1_000_001) for _ in range(600)] + [0, 1, -1]
    cols: dict[str, pa.Array] = {
        "id": pa.array(range(n), pa.int64()),
        "k": pa.array(_column(rng, n, 0.08, lambda: rng.randrange(10)), pa.int32()),
        "b": pa.array(_column(rng, n, 0.2, lambda: rng.random() < 0.5), pa.bool_()),
        "i8": pa.array(_column(rng, n, 0.1, lambda: rng.randrange(-100, 101)), pa.int8()),
        "i16": pa.array(_column(rng, n, 0.1, lambda: rng.randrange(-10000, 10001)), pa.int16()),
        "i32": pa.array(_column(rng, n, 0.1, _pick(rng, small_i32_pool)), pa.int32()),
        "i64": pa.array(_column(rng, n, 0.3, lambda: rng.randrange(-10**12, 10**12)), pa.int64()),
        "f32": pa.array(_column(rng, n, 0.1, lambda: _float(rng, -1000, 1000, 2)), pa.float32()),
        "f64": pa.array(_column(rng, n, 0.15, lambda: _float(rng, -1e6, 1e6, 4)), pa.float64()),
        "d12": pa.array(_column(rng, n, 0.2, lambda: _decimal(rng, 10**8, 2)), pa.decimal128(12, 2)),
        "d18": pa.array(_column(rng, n, 0.2, lambda: _decimal(rng, 10**13, 4)), pa.decimal128(18, 4)),
        "dt": pa.array(_column(rng, n, 0.1, lambda: _date(rng)), pa.date32()),
        "ts": pa.array(_column(rng, n, 0.1, lambda: _ts(rng)), pa.timestamp("us")),
        "s": pa.array(_column(rng, n, 0.15, lambda: _string(rng)), pa.string()),
        "sd": pa.array(_column(rng, n, 0.1, _pick(rng, COLORS)), pa.string()).dictionary_encode(),
        "nul": pa.nulls(n, pa.int32()),
        "nuls": pa.nulls(n, pa.string()),
        "i8x": pa.array(_column(rng, n, 0.05, _pick(rng, I8_LIMITS)), pa.int8()),
        "i16x": pa.array(_column(rng, n, 0.05, _pick(rng, I16_LIMITS)), pa.int16()),
        "i32x": pa.array(_column(rng, n, 0.05, _pick(rng, I32_LIMITS)), pa.int32()),
        "i64x": pa.array(_column(rng, n, 0.05, _pick(rng, I64_LIMITS)), pa.int64()),
        "f64x": pa.array(_column(rng, n, 0.05, _pick(rng, F64_LIMITS)), pa.float64()),
        "d18x": pa.array(_column(rng, n, 0.05, _pick(rng, D18_LIMITS)), pa.decimal128(18, 4)),
    }
    # Force the dictionary index type the brief asks for (dictionary<int32, string>).
    cols["sd"] = cols["sd"].cast(pa.dictionary(pa.int32(), pa.string()))
    return pa.table(cols)


def fact_table(rng: random.Random, n: int = FACT_ROWS) -> pa.Table:
    """SSB-like fact table; foreign keys include NULLs and keys missing from the dimensions."""
    first = dt.date(1994, 6, 1)
    return pa.table({
        "fid": pa.array(range(n), pa.int64()),
        "ka": pa.array(_column(rng, n, 0.03, lambda: rng.randrange(1, 221)), pa.int32()),
        "kb": pa.array(_column(rng, n, 0.0, lambda: rng.randrange(1, 61)), pa.int32()),
        "kd": pa.array(_column(rng, n, 0.02, lambda: first + dt.timedelta(days=rng.randrange(1850))),
                       pa.date32()),
        "qty": pa.array(_column(rng, n, 0.0, lambda: rng.randrange(1, 51)), pa.int32()),
        "price": pa.array(_column(rng, n, 0.01, lambda: Decimal(rng.randrange(100, 1_000_000)).scaleb(-2)),
                          pa.decimal128(12, 2)),
        "disc": pa.array(_column(rng, n, 0.0, lambda: rng.randrange(0, 11)), pa.int8()),
        "tax": pa.array(_column(rng, n, 0.05, lambda: round(rng.uniform(0, 0.08), 4)), pa.float64()),
        "flag": pa.array(_column(rng, n, 0.1, _pick(rng, ["A", "N", "R"])), pa.string()),
    })


def dim_a_table(rng: random.Random) -> pa.Table:
    """Keys 1..200 minus 100..104, with 7 and 13 duplicated and one NULL key."""
    keys: list[int | None] = [k for k in range(1, 201) if not 100 <= k <= 104]
    keys += [7, 13, None]
    n = len(keys)
    return pa.table({
        "ka": pa.array(keys, pa.int32()),
        "name": pa.array([f"cust#{k}" if k is not None else "cust#null" for k in keys]),
        "region": pa.array([REGIONS[rng.randrange(5)] for _ in range(n)]),
        "nation": pa.array([NATIONS[rng.randrange(10)] for _ in range(n)]),
        "seg": pa.array(_column(rng, n, 0.2, _pick(rng, ["AUTO", "BUILDING", "MACHINERY"]))),
    })


def dim_b_table(rng: random.Random) -> pa.Table:
    n = 50
    return pa.table({
        "kb": pa.array(range(1, n + 1), pa.int32()),
        "category": pa.array([f"MFGR#{1 + i % 5}{1 + i % 3}" for i in range(n)]),
        "brand": pa.array([f"MFGR#{1 + i % 5}{1 + i % 3}{i:02d}" for i in range(n)]),
        "color": pa.array(_column(rng, n, 0.15, _pick(rng, COLORS))),
    })


def dim_date_table() -> pa.Table:
    days = [dt.date(1995, 1, 1) + dt.timedelta(days=i) for i in range(1461)]
    return pa.table({
        "d": pa.array(days, pa.date32()),
        "year": pa.array([d.year for d in days], pa.int32()),
        "month": pa.array([d.month for d in days], pa.int32()),
        "yearmonth": pa.array([d.strftime("%b%Y") for d in days]),
        "weeknum": pa.array([d.isocalendar()[1] for d in days], pa.int32()),
        "weekday": pa.array([d.strftime("%A") for d in days]),
        "holiday": pa.array([d.month == 12 and d.day >= 24 for d in days]),
    })


def join_tables(rng: random.Random) -> tuple[pa.Table, pa.Table]:
    """jl/jr: duplicate keys on both sides, NULL keys, keys present on only one side."""
    nl, nr = 500, 300
    jl = pa.table({
        "a": pa.array(_column(rng, nl, 0.05, lambda: rng.randrange(0, 41)), pa.int32()),
        "b": pa.array(_column(rng, nl, 0.1, _pick(rng, ["x", "y", "z"]))),
        "v": pa.array(range(nl), pa.int64()),
        "f": pa.array(_column(rng, nl, 0.1, lambda: round(rng.uniform(-100, 100), 3)), pa.float64()),
    })
    jr = pa.table({
        "a": pa.array(_column(rng, nr, 0.05, lambda: rng.randrange(20, 61)), pa.int32()),
        "b": pa.array(_column(rng, nr, 0.1, _pick(rng, ["x", "y", "w"]))),
        "w": pa.array(range(1000, 1000 + nr), pa.int64()),
        "g": pa.array(_column(rng, nr, 0.2, _pick(rng, WORDS))),
    })
    return jl, jr


DEC_ROWS = 3000


def _wide_decimal(rng: random.Random, digits: int, scale: int) -> Decimal:
    """A value of up to `digits` digits, often more than 18 of them."""
    width = rng.choice([1, 3, 12, 19, 20, 25, digits])
    units = rng.randrange(-10 ** width + 1, 10 ** width)
    return Decimal(units).scaleb(-scale)


def dec_table(rng: random.Random, n: int = DEC_ROWS) -> pa.Table:
    """Decimals of up to 38 digits (128-bit in kernels): `d38` decimal(38,8) and `d38z`
    decimal(38,0) bounded so sums of every row fit 38 digits, `d20` decimal(20,2) with few
    distinct values (group and join keys), `d9` decimal(9,3), `big` bigint near 2^62 (its
    sum is numeric in PostgreSQL), `dmax` decimal(38,8) holding the type's extremes
    (compare them, never sum them)."""
    extremes = [Decimal("99999999999999999999999999999.99999999"), Decimal("-99999999999999999999999999999.99999999"),
                Decimal("0.00000001"), Decimal("-0.00000001"), Decimal(0)]
    keys20 = [Decimal(rng.randrange(-10 ** 19, 10 ** 19)).scaleb(-2) for _ in range(40)] + [Decimal("0.01")]
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "k": pa.array([i % 10 for i in range(n)], pa.int32()),
        "d38": pa.array(_column(rng, n, 0.1, lambda: _wide_decimal(rng, 34, 8)), pa.decimal128(38, 8)),
        "d38z": pa.array(_column(rng, n, 0.1, lambda: _wide_decimal(rng, 34, 0)), pa.decimal128(38, 0)),
        "d20": pa.array(_column(rng, n, 0.1, _pick(rng, keys20)), pa.decimal128(20, 2)),
        "d9": pa.array(_column(rng, n, 0.1, lambda: _decimal(rng, 999_999_999, 3)), pa.decimal128(9, 3)),
        "big": pa.array(_column(rng, n, 0.05, lambda: rng.choice([2 ** 62, 2 ** 62 - 1, -(2 ** 62), 7, -3])),
                        pa.int64()),
        "dmax": pa.array(_column(rng, n, 0.1, _pick(rng, extremes)), pa.decimal128(38, 8)),
    })


def tiny_table() -> pa.Table:
    return pa.table({
        "id": pa.array([1, 2, 3, 4, 5], pa.int32()),
        "x": pa.array([10, None, -3, 0, 10], pa.int32()),
        "y": pa.array([1.5, 2.5, None, -0.5, 1e10], pa.float64()),
        "s": pa.array(["one", None, "", "four", "one"]),
        "d": pa.array([dt.date(2020, 2, 29), None, dt.date(1969, 12, 31), dt.date(2000, 1, 1),
                       dt.date(2020, 2, 29)], pa.date32()),
    })


def csv_subset(wide: pa.Table) -> pa.Table:
    """Columns of `wide` whose CSV text round-trips, with '' turned into NULL.

    DataFusion's and DuckDB's CSV readers both read a quoted empty field as NULL (unlike
    PostgreSQL's COPY CSV), so an empty string cannot survive the trip; the CSV table
    holds NULL there and every engine is expected to read it that way."""
    sub = wide.select(["id", "k", "b", "i32", "i64", "f64", "dt", "ts", "s"])
    s = [None if v == "" else v for v in sub.column("s").to_pylist()]
    return sub.set_column(sub.schema.get_field_index("s"), "s", pa.array(s, pa.string()))


def _write_csv(table: pa.Table, path: Path) -> None:
    """CSV with NULL as an empty unquoted field and every string quoted, so that '' and
    NULL differ, as in PostgreSQL's COPY ... CSV."""
    opts = pacsv.WriteOptions(include_header=True, quoting_style="all_valid")
    pacsv.write_csv(table, path, opts)


def generate(directory: Path, seed: int = SEED) -> dict[str, TableFiles]:
    """Write every table under `directory`; return name -> files. Deterministic for `seed`."""
    directory.mkdir(parents=True, exist_ok=True)
    tables = build_tables(seed)
    out: dict[str, TableFiles] = {}
    for name in ["wide", "dim_a", "dim_b", "dim_date", "jl", "jr", "empty", "dec"]:
        path = directory / f"{name}.parquet"
        pq.write_table(tables[name], path, row_group_size=ROW_GROUP)
        out[name] = TableFiles(name, path, "parquet", tables[name].schema)
    fact_dir = directory / "fact"  # a directory of files is one table
    fact_dir.mkdir(exist_ok=True)
    fact = tables["fact"]
    bounds = [0, 2500, 4200, fact.num_rows]
    for part, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        pq.write_table(fact.slice(lo, hi - lo), fact_dir / f"part-{part}.parquet", row_group_size=ROW_GROUP)
    out["fact"] = TableFiles("fact", fact_dir, "parquet", fact.schema)
    arrow_path = directory / "wide.arrow"
    feather.write_feather(tables["wide"], arrow_path, compression="uncompressed", chunksize=ROW_GROUP)
    out["wide_arrow"] = TableFiles("wide_arrow", arrow_path, "arrow", tables["wide"].schema)
    csv_path = directory / "wide_csv.csv"
    _write_csv(tables["wide_csv"], csv_path)
    out["wide_csv"] = TableFiles("wide_csv", csv_path, "csv", tables["wide_csv"].schema)
    out["tiny"] = TableFiles("tiny", directory / "tiny", "memory", tables["tiny"].schema, tables["tiny"])
    return out


def build_tables(seed: int = SEED) -> dict[str, pa.Table]:
    """All tables as pyarrow tables (what the files hold), keyed by registered name."""
    rng = random.Random(seed)
    wide = wide_table(rng)
    jl, jr = join_tables(rng)
    tiny = tiny_table()
    return {
        "wide": wide,
        "wide_arrow": wide,
        "wide_csv": csv_subset(wide),
        "fact": fact_table(rng),
        "dim_a": dim_a_table(rng),
        "dim_b": dim_b_table(rng),
        "dim_date": dim_date_table(),
        "jl": jl,
        "jr": jr,
        "tiny": tiny,
        "empty": tiny.slice(0, 0),
        "dec": dec_table(rng),
    }
