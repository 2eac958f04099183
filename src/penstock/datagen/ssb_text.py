"""Vocabularies and vectorised string builders for the SSB generator.

The vocabularies are the TPC-H dbgen distributions that SSB inherits (nations and regions,
colors, part types, containers, segments, priorities, ship modes). Every text column is built
without a per-row Python loop, because per-row formatting would dominate the run time:

- small vocabularies: draw an index with numpy, then ``take`` on a pyarrow string array;
- fixed-width formatted text (``Customer#000000042``, phone numbers): fill a ``(rows, width)``
  uint8 matrix with numpy and hand its bytes to Arrow as a string array's data buffer;
- random addresses: draw lengths and characters with numpy, build the offsets buffer with a
  cumulative sum.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# TPC-H nations in dbgen order with the index of their region; SSB keeps them.
NATIONS: tuple[tuple[str, int], ...] = (
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4),
    ("ETHIOPIA", 0), ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2),
    ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0),
    ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3),
    ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
)
REGIONS: tuple[str, ...] = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
CITIES_PER_NATION = 10
CITY_PREFIX_LEN = 9  # c_city / s_city: 9 characters of the nation name, then one digit

SEGMENTS: tuple[str, ...] = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
PRIORITIES: tuple[str, ...] = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW")
SHIP_MODES: tuple[str, ...] = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")

COLORS: tuple[str, ...] = (
    "almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched",
    "blue", "blush", "brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate",
    "coral", "cornflower", "cornsilk", "cream", "cyan", "dark", "deep", "dim", "dodger",
    "drab", "firebrick", "floral", "forest", "frosted", "gainsboro", "ghost", "goldenrod",
    "green", "grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace", "lavender",
    "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium", "metallic",
    "midnight", "mint", "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid",
    "pale", "papaya", "peach", "peru", "pink", "plum", "powder", "puff", "purple", "red",
    "rose", "rosy", "royal", "saddle", "salmon", "sandy", "seashell", "sienna", "sky",
    "slate", "smoke", "snow", "spring", "steel", "tan", "thistle", "tomato", "turquoise",
    "violet", "wheat", "white", "yellow",
)
TYPE_SYLLABLES: tuple[tuple[str, ...], ...] = (
    ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"),
    ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"),
    ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER"),
)
CONTAINER_SYLLABLES: tuple[tuple[str, ...], ...] = (
    ("SM", "LG", "MED", "JUMBO", "WRAP"),
    ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"),
)

MFGRS = 5
CATEGORIES_PER_MFGR = 5
BRANDS_PER_CATEGORY = 40

ALNUM = np.frombuffer(
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", dtype=np.uint8
)


def _combine(syllables: tuple[tuple[str, ...], ...]) -> list[str]:
    """All syllable combinations in dbgen order (first syllable varies slowest)."""
    words = [""]
    for options in syllables:
        words = [f"{w} {o}".strip() for w in words for o in options]
    return words


def nation_region_index() -> np.ndarray:
    """Region index of each nation index, for vectorised lookup."""
    return np.array([region for _, region in NATIONS], dtype=np.int8)


def city_names() -> list[str]:
    """The 250 cities: nation index * 10 + digit -> 'UNITED KI1' and so on."""
    return [
        name[:CITY_PREFIX_LEN].ljust(CITY_PREFIX_LEN) + str(digit)
        for name, _ in NATIONS
        for digit in range(CITIES_PER_NATION)
    ]


def mfgr_names() -> list[str]:
    return [f"MFGR#{m}" for m in range(1, MFGRS + 1)]


def category_names() -> list[str]:
    """Index (mfgr-1)*5 + (category-1) -> 'MFGR#12' and so on."""
    return [f"MFGR#{m}{c}" for m in range(1, MFGRS + 1) for c in range(1, CATEGORIES_PER_MFGR + 1)]


def brand_names() -> list[str]:
    """Index ((mfgr-1)*5 + category-1)*40 + brand-1 -> 'MFGR#2221' (brand 21 of MFGR#22).

    The brand number is appended without padding, as dbgen's sprintf("%s%ld") does, so the
    range 'MFGR#2221'..'MFGR#2228' of Q2.2 holds exactly brands 21-28 of category 22.
    """
    return [f"{cat}{b}" for cat in category_names() for b in range(1, BRANDS_PER_CATEGORY + 1)]


def type_names() -> list[str]:
    return _combine(TYPE_SYLLABLES)


def container_names() -> list[str]:
    return _combine(CONTAINER_SYLLABLES)


def color_pair_names() -> list[str]:
    """Index first*len(COLORS) + second -> 'first second' (p_name)."""
    return [f"{a} {b}" for a in COLORS for b in COLORS]


def vocabulary(words: list[str] | tuple[str, ...]) -> pa.StringArray:
    """A vocabulary as an Arrow array, ready for ``take``."""
    return pa.array(list(words), type=pa.string())


def pick(vocab: pa.StringArray, index: np.ndarray) -> pa.StringArray:
    """vocab[index] as a plain string array, without a Python loop."""
    return vocab.take(pa.array(index))


def fixed_width_strings(matrix: np.ndarray) -> pa.StringArray:
    """Each row of a ``(n, width)`` uint8 matrix of ASCII codes becomes one string."""
    n, width = matrix.shape
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(width)
    data = np.ascontiguousarray(matrix, dtype=np.uint8)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def digits(values: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded decimal digits of non-negative ``values`` as a ``(n, width)`` uint8 matrix."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((values.astype(np.int64)[:, None] // powers) % 10 + ord("0")).astype(np.uint8)


def constant_strings(text: str, n: int) -> pa.StringArray:
    """``n`` copies of one ASCII string."""
    code = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return fixed_width_strings(np.broadcast_to(code, (n, code.size)))


def prefixed_numbers(prefix: str, values: np.ndarray, width: int) -> pa.StringArray:
    """'Customer#000000042'-style names: a fixed prefix and zero-padded numbers."""
    head = np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)
    matrix = np.empty((values.size, head.size + width), dtype=np.uint8)
    matrix[:, : head.size] = head
    matrix[:, head.size :] = digits(values, width)
    return fixed_width_strings(matrix)


def phone_numbers(rng: np.random.Generator, nation: np.ndarray) -> pa.StringArray:
    """dbgen's gen_phone: 'CC-AAA-EEE-NNNN' with CC = 10 + nation index."""
    n = nation.size
    matrix = np.full((n, 15), ord("-"), dtype=np.uint8)
    matrix[:, 0:2] = digits(nation.astype(np.int64) + 10, 2)
    matrix[:, 3:6] = digits(rng.integers(100, 1000, n), 3)
    matrix[:, 7:10] = digits(rng.integers(100, 1000, n), 3)
    matrix[:, 11:15] = digits(rng.integers(1000, 10000, n), 4)
    return fixed_width_strings(matrix)


def random_alnum(rng: np.random.Generator, n: int, min_len: int, max_len: int) -> pa.StringArray:
    """``n`` random alphanumeric strings with lengths uniform in [min_len, max_len]."""
    lengths = rng.integers(min_len, max_len + 1, n, dtype=np.int32)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    chars = ALNUM[rng.integers(0, ALNUM.size, int(offsets[-1]), dtype=np.uint8)]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars))
