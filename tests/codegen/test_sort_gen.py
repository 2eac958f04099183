"""The small-sort kernel on its own (codegen/sort_gen.py): random rows with many ties and
NULLs, sorted by three keys, against Python's stable sort of the same rows; rows past the
count stay untouched; which key types it takes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from penstock.codegen.sort_gen import generate_small_sort, sortable
from penstock.device.registry import get_backend
from penstock.exec.kernels import compile_kernel
from penstock.plan.types import DataType, Kind

INT = DataType(Kind.INT64)
TEXT = DataType(Kind.STRING)
DATE = DataType(Kind.DATE)


def test_sortable_key_types() -> None:
    assert sortable([INT, TEXT, DATE, DataType(Kind.BOOL)], [(0, True, False), (1, False, True), (3, True, True)])
    assert sortable([INT, DataType(Kind.FLOAT64)], [(0, True, False), (1, True, False)])  # NaN above numbers


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rank_sort_matches_a_stable_sort(device: str, seed: int) -> None:
    be = get_backend(device)
    rng = np.random.default_rng(seed)
    n, capacity = 300, 320
    words = [b"", b"a", b"ab", b"b", b"\xc3\xa9", b"a\x00"]
    text = [words[k] for k in rng.integers(0, len(words), capacity)]
    starts = np.cumsum([0] + [len(t) for t in text[:-1]]).astype(np.int64)
    host = {
        ("values", 0): rng.integers(-3, 3, capacity).astype(np.int64),
        ("validity", 1): (rng.random(capacity) > 0.2).astype(np.uint8),
        ("text_start", 1): starts,
        ("text_len", 1): np.array([len(t) for t in text], np.int32),
        ("values", 2): rng.integers(0, 4, capacity).astype(np.int32),
    }
    data = np.frombuffer(b"".join(text) or b"\0", np.uint8)
    types = [INT, TEXT, DATE]
    keys = [(1, False, True), (0, True, False), (2, False, False)]  # text DESC NULLS FIRST, int, date DESC
    parts = list(host)
    kernel = generate_small_sort(types, parts, keys)
    moved = {k: be.to_device(np.full_like(a, 7)) for k, a in host.items()}
    args: list[Any] = [be.to_device(np.array([n], np.uint64)), capacity]
    for key in parts:
        args += [be.to_device(host[key]), moved[key]]
    args.append(be.to_device(data))
    be.launch(compile_kernel(be, kernel), capacity * 32, args)
    got = {k: be.to_host(a) for k, a in moved.items()}

    def text_key(i: int) -> tuple[int, tuple[int, ...]]:
        if not host[("validity", 1)][i]:
            return (0, ())  # NULLs first
        return (1, tuple(255 - c for c in text[i]) + (256,))  # bytes DESC: a prefix after longer texts

    order = sorted(range(n), key=lambda i: (text_key(i), host[("values", 0)][i], -host[("values", 2)][i]))
    for key in parts:
        assert np.array_equal(got[key][:n], host[key][order]), key
        assert (got[key][n:] == 7).all()  # rows past the count are not written
