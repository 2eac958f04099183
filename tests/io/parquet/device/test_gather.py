"""parquet_gather, the kernel that copies text spans into Arrow's layout: it copies only when
no page of the column raised the error flag (a damaged page's spans may point anywhere),
and a span past the room it was given raises the flag instead of writing past it (the batch
decoder gives it room bounded by the page walk, without waiting for the total)."""

from __future__ import annotations

import numpy as np
import pytest

from penstock.device import get_backend
from penstock.io.parquet.device.kernels import gather_kernel

GUARD = 64


def _spans(be, words: list[bytes]) -> tuple:
    """The words laid end to end in a source buffer (on the device), their spans, and the
    Arrow offsets of the gathered text."""
    source = be.to_device(np.frombuffer(b"".join(words) or b"\0", np.uint8).copy())
    at = np.cumsum([0] + [len(w) for w in words])
    starts = be.to_device((be.address(source) + at[:-1]).astype(np.int64))
    lengths = be.to_device(np.array([len(w) for w in words], np.int32))
    offsets = be.to_device(at.astype(np.int64))
    return source, starts, lengths, offsets, int(at[-1])


def _gather(be, words: list[bytes], capacity: int, flag: int = 0) -> tuple[bytes, bytes, int]:
    """(the gathered bytes within the room, the guard bytes after it, the error flag)."""
    source, starts, lengths, offsets, _ = _spans(be, words)
    room = be.to_device(np.full(capacity + GUARD, 0xAA, np.uint8))
    err = be.to_device(np.array([flag], np.int32))
    be.launch(be.compile(gather_kernel()), len(words), [len(words), starts, lengths, offsets, room, capacity, err])
    out = be.to_host(room).tobytes()
    del source
    return out[:capacity], out[capacity:], int(be.to_host(err)[0])


WORDS = [b"alpha", b"", b"bravo charlie", b"d" * 70, b"echo"] * 41  # rows past a warp, a span past 32 bytes


def test_the_spans_are_copied_end_to_end(device: str) -> None:
    be = get_backend(device)
    total = sum(len(w) for w in WORDS)
    data, guard, err = _gather(be, WORDS, total)
    assert err == 0
    assert data == b"".join(WORDS)
    assert guard == b"\xaa" * GUARD


def test_a_span_past_the_room_raises_instead_of_writing_past_it(device: str) -> None:
    be = get_backend(device)
    total = sum(len(w) for w in WORDS)
    data, guard, err = _gather(be, WORDS, total - 3)
    assert err != 0
    assert guard == b"\xaa" * GUARD  # nothing written past the room


@pytest.mark.parametrize("flag", [1, 7])
def test_nothing_is_copied_once_a_page_raised_the_flag(device: str, flag: int) -> None:
    be = get_backend(device)
    total = sum(len(w) for w in WORDS)
    data, guard, err = _gather(be, WORDS, total, flag)
    assert err == flag
    assert data == b"\xaa" * total
