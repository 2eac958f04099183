"""The SSB fact table, lineorder, generated order-chunk by order-chunk with numpy.

This mirrors SSB dbgen's mk_order: an order has 1-7 lines; the customer, order date and
priority belong to the order, everything else to the line. Prices follow dbgen's
``rpb_routine`` so that extended price, revenue and supply cost are consistent with the part
key. A chunk is ``ORDERS_PER_CHUNK`` orders (about a million lines) with its own random
stream, so chunks can be generated in any order or in parallel with identical results.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from penstock.datagen import ssb_text as text
from penstock.datagen.ssb_tables import (
    FIRST_DAY,
    LAST_DAY,
    ORDER_DATE_SLACK_DAYS,
    SCHEMAS,
    SsbSizes,
    chunk_rng,
    datekeys,
)

# 2**18 orders * 4 lines on average ~ one 2**20-row row group per chunk.
ORDERS_PER_CHUNK = 1 << 18
LINES_MIN, LINES_MAX = 1, 7
QUANTITY_MAX = 50
DISCOUNT_MAX = 10
TAX_MAX = 8
COMMIT_DAYS_MIN, COMMIT_DAYS_MAX = 30, 90
# Order dates are day indices 0..ORDER_DAYS-1 from 1992-01-01 (up to 1998-08-02).
ORDER_DAYS = (LAST_DAY - FIRST_DAY).days + 1 - ORDER_DATE_SLACK_DAYS


def sparse_orderkey(index: np.ndarray) -> np.ndarray:
    """dbgen's mk_sparse: of every 32 keys only the first 8 are used (1-7, 32-39, 64-71...).

    The gaps leave room for TPC-H's refresh inserts; keeping them makes the key range (and
    its need for 64 bits at large scale) match data made by dbgen.
    """
    index = index.astype(np.int64)
    return ((index >> 3) << 5) | (index & 7)


def retail_price(partkey: np.ndarray) -> np.ndarray:
    """dbgen's rpb_routine, in cents: 90000 + (key/10 mod 20001) + 100 * (key mod 1000)."""
    key = partkey.astype(np.int32)
    return 90000 + (key // 10) % 20001 + 100 * (key % 1000)


@dataclass(frozen=True)
class LineorderGenerator:
    """Generates lineorder for one (sizes, seed); ``chunk(k)`` is a pure function of k."""

    sizes: SsbSizes
    seed: int

    @property
    def chunk_count(self) -> int:
        return -(-self.sizes.orders // ORDERS_PER_CHUNK)

    @property
    def expected_rows(self) -> int:
        """Mean line count; the exact count is only known after generation."""
        return self.sizes.orders * (LINES_MIN + LINES_MAX) // 2

    def chunks(self) -> Iterator[pa.RecordBatch]:
        for index in range(self.chunk_count):
            yield self.chunk(index)

    def chunk(self, index: int) -> pa.RecordBatch:
        if not 0 <= index < self.chunk_count:
            raise IndexError(f"lineorder chunk {index} out of range 0..{self.chunk_count - 1}")
        start = index * ORDERS_PER_CHUNK
        end = min(start + ORDERS_PER_CHUNK, self.sizes.orders)
        return _make_chunk(self.sizes, chunk_rng(self.seed, "lineorder", index), start, end)


_DATEKEYS = datekeys()
_DATEKEYS.setflags(write=False)
_PRIORITIES = text.vocabulary(text.PRIORITIES)
_SHIP_MODES = text.vocabulary(text.SHIP_MODES)


def _make_chunk(sizes: SsbSizes, rng: np.random.Generator, start: int, end: int) -> pa.RecordBatch:
    """Orders ``start..end-1`` (0-based) and all their lines."""
    n_orders = end - start
    # Per order.
    lines = rng.integers(LINES_MIN, LINES_MAX + 1, n_orders, dtype=np.int32)
    order_day = rng.integers(0, ORDER_DAYS, n_orders, dtype=np.int32)
    custkey = rng.integers(1, sizes.customers + 1, n_orders, dtype=np.int32)
    priority = rng.integers(0, len(text.PRIORITIES), n_orders, dtype=np.int8)
    # Per line.
    n = int(lines.sum())
    partkey = rng.integers(1, sizes.parts + 1, n, dtype=np.int32)
    suppkey = rng.integers(1, sizes.suppliers + 1, n, dtype=np.int32)
    quantity = rng.integers(1, QUANTITY_MAX + 1, n, dtype=np.int32)
    discount = rng.integers(0, DISCOUNT_MAX + 1, n, dtype=np.int32)
    tax = rng.integers(0, TAX_MAX + 1, n, dtype=np.int32)
    commit_days = rng.integers(COMMIT_DAYS_MIN, COMMIT_DAYS_MAX + 1, n, dtype=np.int32)
    shipmode = rng.integers(0, len(text.SHIP_MODES), n, dtype=np.int8)

    first_line = np.zeros(n_orders, dtype=np.int64)
    np.cumsum(lines[:-1], out=first_line[1:])
    linenumber = np.arange(1, n + 1, dtype=np.int32) - np.repeat(first_line, lines).astype(np.int32)
    line_day = np.repeat(order_day, lines)

    # All of these fit int32: price < 210,000 cents, quantity <= 50, factors <= 108.
    price = retail_price(partkey)
    extendedprice = quantity * price
    revenue = extendedprice * (100 - discount) // 100
    supplycost = 6 * price // 10
    # dbgen: o_totalprice += (eprice * (100 - disc) / 100) * (100 + tax) / 100, per line.
    ordtotal = np.add.reduceat(revenue * (100 + tax) // 100, first_line).astype(np.int32)

    orderkey = sparse_orderkey(np.arange(start + 1, end + 1, dtype=np.int64))
    return pa.record_batch([
        pa.array(np.repeat(orderkey, lines)),
        pa.array(linenumber),
        pa.array(np.repeat(custkey, lines)),
        pa.array(partkey),
        pa.array(suppkey),
        pa.array(_DATEKEYS[line_day]),
        text.pick(_PRIORITIES, np.repeat(priority, lines)),
        text.constant_strings("0", n),
        pa.array(quantity),
        pa.array(extendedprice),
        pa.array(np.repeat(ordtotal, lines)),
        pa.array(discount),
        pa.array(revenue),
        pa.array(supplycost),
        pa.array(tax),
        pa.array(_DATEKEYS[line_day + commit_days]),
        text.pick(_SHIP_MODES, shipmode),
    ], schema=SCHEMAS["lineorder"])
