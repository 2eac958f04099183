"""SSB schemas, table sizes, and the generators of the four dimension tables.

Follows the Star Schema Benchmark (O'Neil, O'Neil, Chen, revision 3) and the SSB variant of
TPC-H dbgen it was specified with. Every table is produced as a sequence of chunks of
``CHUNK_ROWS`` rows; chunk ``k`` of table ``t`` draws from its own numpy Generator seeded by
``(seed, t, k)``, so the output depends only on (seed, sf) -- never on timing or threads.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from penstock.datagen import ssb_text as text

# Rows per Parquet row group / Arrow record batch, and per generated dimension chunk.
CHUNK_ROWS = 1 << 20

TABLES: tuple[str, ...] = ("lineorder", "customer", "supplier", "part", "date")

# Stream ids that keep the random streams of different tables apart.
_STREAM = {"customer": 1, "supplier": 2, "part": 3, "lineorder": 4}

# The calendar of the date table, and of the dates lineorder refers to.
FIRST_DAY = dt.date(1992, 1, 1)
LAST_DAY = dt.date(1998, 12, 31)
# dbgen draws order dates up to LAST_DAY - 151 days (the longest ship + receipt delay).
ORDER_DATE_SLACK_DAYS = 151


def _field(name: str, kind: pa.DataType) -> pa.Field:
    return pa.field(name, kind, nullable=False)


_I32, _I64, _STR = pa.int32(), pa.int64(), pa.string()

SCHEMAS: dict[str, pa.Schema] = {
    "lineorder": pa.schema([
        _field("lo_orderkey", _I64), _field("lo_linenumber", _I32),
        _field("lo_custkey", _I32), _field("lo_partkey", _I32), _field("lo_suppkey", _I32),
        _field("lo_orderdate", _I32), _field("lo_orderpriority", _STR),
        _field("lo_shippriority", _STR), _field("lo_quantity", _I32),
        _field("lo_extendedprice", _I32), _field("lo_ordtotalprice", _I32),
        _field("lo_discount", _I32), _field("lo_revenue", _I32),
        _field("lo_supplycost", _I32), _field("lo_tax", _I32),
        _field("lo_commitdate", _I32), _field("lo_shipmode", _STR),
    ]),
    "customer": pa.schema([
        _field("c_custkey", _I32), _field("c_name", _STR), _field("c_address", _STR),
        _field("c_city", _STR), _field("c_nation", _STR), _field("c_region", _STR),
        _field("c_phone", _STR), _field("c_mktsegment", _STR),
    ]),
    "supplier": pa.schema([
        _field("s_suppkey", _I32), _field("s_name", _STR), _field("s_address", _STR),
        _field("s_city", _STR), _field("s_nation", _STR), _field("s_region", _STR),
        _field("s_phone", _STR),
    ]),
    "part": pa.schema([
        _field("p_partkey", _I32), _field("p_name", _STR), _field("p_mfgr", _STR),
        _field("p_category", _STR), _field("p_brand1", _STR), _field("p_color", _STR),
        _field("p_type", _STR), _field("p_size", _I32), _field("p_container", _STR),
    ]),
    "date": pa.schema([
        _field("d_datekey", _I32), _field("d_date", _STR), _field("d_dayofweek", _STR),
        _field("d_month", _STR), _field("d_year", _I32), _field("d_yearmonthnum", _I32),
        _field("d_yearmonth", _STR), _field("d_daynuminweek", _I32),
        _field("d_daynuminmonth", _I32), _field("d_daynuminyear", _I32),
        _field("d_monthnuminyear", _I32), _field("d_weeknuminyear", _I32),
        _field("d_sellingseason", _STR), _field("d_lastdayinweekfl", _I32),
        _field("d_lastdayinmonthfl", _I32), _field("d_holidayfl", _I32),
        _field("d_weekdayfl", _I32),
    ]),
}


@dataclass(frozen=True)
class SsbSizes:
    """Row counts of one scale factor (lineorder: orders; its rows are ~4 per order)."""

    customers: int
    suppliers: int
    parts: int
    orders: int
    days: int

    @classmethod
    def for_scale(cls, sf: float) -> SsbSizes:
        if not sf > 0:
            raise ValueError(f"scale factor must be positive, got {sf!r}")

        def scaled(base: int) -> int:
            # round() rather than int(): 0.29 * 2000 is 579.999... in binary floating point.
            return max(1, round(base * sf))

        if sf >= 1:
            parts = 200_000 * math.floor(1 + math.log2(sf))
        else:
            parts = scaled(200_000)
        days = (LAST_DAY - FIRST_DAY).days + 1
        return cls(scaled(30_000), scaled(2_000), parts, scaled(1_500_000), days)


def chunk_rng(seed: int, table: str, chunk: int) -> np.random.Generator:
    """The random stream of one chunk of one table: a pure function of its coordinates."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_STREAM[table], chunk)))


def chunk_bounds(total: int, chunk_rows: int = CHUNK_ROWS) -> Iterator[tuple[int, int, int]]:
    """(chunk index, first row, end row) covering ``range(total)``."""
    for index, start in enumerate(range(0, total, chunk_rows)):
        yield index, start, min(start + chunk_rows, total)


@dataclass(frozen=True)
class _Vocab:
    """Arrow vocabularies built once per generation run, shared read-only by chunks."""

    nations: pa.StringArray
    regions: pa.StringArray
    cities: pa.StringArray
    segments: pa.StringArray
    colors: pa.StringArray
    color_pairs: pa.StringArray
    mfgrs: pa.StringArray
    categories: pa.StringArray
    brands: pa.StringArray
    types: pa.StringArray
    containers: pa.StringArray
    region_of_nation: np.ndarray

    @classmethod
    def build(cls) -> _Vocab:
        v = text.vocabulary
        return cls(
            nations=v([name for name, _ in text.NATIONS]), regions=v(text.REGIONS),
            cities=v(text.city_names()), segments=v(text.SEGMENTS), colors=v(text.COLORS),
            color_pairs=v(text.color_pair_names()), mfgrs=v(text.mfgr_names()),
            categories=v(text.category_names()), brands=v(text.brand_names()),
            types=v(text.type_names()), containers=v(text.container_names()),
            region_of_nation=text.nation_region_index(),
        )


VOCAB = _Vocab.build()  # immutable: Arrow arrays and a read-only numpy array
VOCAB.region_of_nation.setflags(write=False)


def _keys(start: int, end: int) -> np.ndarray:
    return np.arange(start + 1, end + 1, dtype=np.int32)


def _place(rng: np.random.Generator, n: int) -> dict[str, pa.Array]:
    """Address, city, nation, region and phone, shared by customer and supplier (mk_cust)."""
    nation = rng.integers(0, len(text.NATIONS), n, dtype=np.int8)
    city = nation.astype(np.int16) * text.CITIES_PER_NATION + rng.integers(0, 10, n, dtype=np.int16)
    return {
        "address": text.random_alnum(rng, n, 10, 25),
        "city": text.pick(VOCAB.cities, city),
        "nation": text.pick(VOCAB.nations, nation),
        "region": text.pick(VOCAB.regions, VOCAB.region_of_nation[nation]),
        "phone": text.phone_numbers(rng, nation),
    }


def customer_chunks(sizes: SsbSizes, seed: int) -> Iterator[pa.RecordBatch]:
    for index, start, end in chunk_bounds(sizes.customers):
        rng = chunk_rng(seed, "customer", index)
        n, keys = end - start, _keys(start, end)
        place = _place(rng, n)
        segment = rng.integers(0, len(text.SEGMENTS), n, dtype=np.int8)
        yield pa.record_batch([
            pa.array(keys), text.prefixed_numbers("Customer#", keys, 9), place["address"],
            place["city"], place["nation"], place["region"], place["phone"],
            text.pick(VOCAB.segments, segment),
        ], schema=SCHEMAS["customer"])


def supplier_chunks(sizes: SsbSizes, seed: int) -> Iterator[pa.RecordBatch]:
    for index, start, end in chunk_bounds(sizes.suppliers):
        rng = chunk_rng(seed, "supplier", index)
        n, keys = end - start, _keys(start, end)
        place = _place(rng, n)
        yield pa.record_batch([
            pa.array(keys), text.prefixed_numbers("Supplier#", keys, 9), place["address"],
            place["city"], place["nation"], place["region"], place["phone"],
        ], schema=SCHEMAS["supplier"])


def part_chunks(sizes: SsbSizes, seed: int) -> Iterator[pa.RecordBatch]:
    """mk_part: mfgr, category and brand are independent uniform draws (1-5, 1-5, 1-40)."""
    n_colors = len(text.COLORS)
    for index, start, end in chunk_bounds(sizes.parts):
        rng = chunk_rng(seed, "part", index)
        n = end - start
        # p_name: two distinct colors (dbgen's agg_str draws without replacement);
        # p_color is the first of them.
        first = rng.integers(0, n_colors, n, dtype=np.int16)
        second = rng.integers(0, n_colors - 1, n, dtype=np.int16)
        second += second >= first
        mfgr = rng.integers(0, text.MFGRS, n, dtype=np.int16)
        category = mfgr * text.CATEGORIES_PER_MFGR + rng.integers(
            0, text.CATEGORIES_PER_MFGR, n, dtype=np.int16
        )
        brand = category * text.BRANDS_PER_CATEGORY + rng.integers(
            0, text.BRANDS_PER_CATEGORY, n, dtype=np.int16
        )
        kind = rng.integers(0, len(VOCAB.types), n, dtype=np.int16)
        size = rng.integers(1, 51, n, dtype=np.int32)
        container = rng.integers(0, len(VOCAB.containers), n, dtype=np.int16)
        yield pa.record_batch([
            pa.array(_keys(start, end)),
            text.pick(VOCAB.color_pairs, first * n_colors + second),
            text.pick(VOCAB.mfgrs, mfgr), text.pick(VOCAB.categories, category),
            text.pick(VOCAB.brands, brand), text.pick(VOCAB.colors, first),
            text.pick(VOCAB.types, kind), pa.array(size), text.pick(VOCAB.containers, container),
        ], schema=SCHEMAS["part"])


# dbgen's date rules: selling seasons by month, and its fixed list of holidays.
_SEASON_OF_MONTH = (
    "Winter", "Winter", "Winter", "Spring", "Summer", "Summer",
    "Summer", "Summer", "Fall", "Fall", "Christmas", "Christmas",
)
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)
# Indexed by ISO weekday (Monday = 1); spelled out so the output never depends on a locale.
_WEEKDAYS = ("", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_HOLIDAYS = {(12, 24), (1, 1), (2, 20), (4, 20), (5, 20), (7, 20), (8, 20), (9, 20),
             (10, 20), (11, 20)}


def calendar_days() -> list[dt.date]:
    """Every day of the SSB calendar, 1992-01-01 through 1998-12-31."""
    count = (LAST_DAY - FIRST_DAY).days + 1
    return [FIRST_DAY + dt.timedelta(days=i) for i in range(count)]


def datekeys() -> np.ndarray:
    """yyyymmdd of each calendar day index: the lookup lineorder's dates go through."""
    return np.array([d.year * 10000 + d.month * 100 + d.day for d in calendar_days()],
                    dtype=np.int32)


def date_table() -> pa.RecordBatch:
    """The date dimension. 2,557 rows; a Python loop is fine at this size."""
    cols: dict[str, list[object]] = {f.name: [] for f in SCHEMAS["date"]}
    for day in calendar_days():
        month_name = _MONTHS[day.month - 1]
        weekday = (day.isoweekday() % 7) + 1  # Sunday = 1 ... Saturday = 7
        yday = day.timetuple().tm_yday
        last_in_month = (day + dt.timedelta(days=1)).month != day.month
        values = {
            "d_datekey": day.year * 10000 + day.month * 100 + day.day,
            "d_date": f"{month_name} {day.day}, {day.year}",
            "d_dayofweek": _WEEKDAYS[day.isoweekday()],
            "d_month": month_name,
            "d_year": day.year,
            "d_yearmonthnum": day.year * 100 + day.month,
            "d_yearmonth": f"{month_name[:3]}{day.year}",
            "d_daynuminweek": weekday,
            "d_daynuminmonth": day.day,
            "d_daynuminyear": yday,
            "d_monthnuminyear": day.month,
            "d_weeknuminyear": (yday - 1) // 7 + 1,
            "d_sellingseason": _SEASON_OF_MONTH[day.month - 1],
            "d_lastdayinweekfl": int(weekday == 7),
            "d_lastdayinmonthfl": int(last_in_month),
            "d_holidayfl": int((day.month, day.day) in _HOLIDAYS),
            "d_weekdayfl": int(1 < weekday < 7),
        }
        for name, value in values.items():
            cols[name].append(value)
    schema = SCHEMAS["date"]
    return pa.record_batch([pa.array(cols[f.name], type=f.type) for f in schema], schema=schema)
