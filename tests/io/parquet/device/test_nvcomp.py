"""Pages decompressed on the host (nvcomp.decompress_on_host: the CPU backend's path, and a
GPU's without nvCOMP), shared among threads: each page lands in its place whatever thread
took it, and of several damaged pages the first in the list is the one blamed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from penstock.io.parquet.device import nvcomp
from penstock.io.parquet.device.nvcomp import PageError, Work


def pages(codec: str, count: int, seed: int) -> tuple[Work, bytearray, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrow = pa.Codec(nvcomp.ARROW_NAMES[codec])
    work, src, plain = Work(codec), bytearray(), []
    at = 0
    for k in range(count):
        data = rng.integers(0, 4, int(rng.integers(1, 5000)), dtype=np.uint8).tobytes()  # compressible
        packed = arrow.compress(data, asbytes=True)
        work.add(len(src), len(packed), at, len(data), f"column{k}")
        src += packed
        plain.append(data)
        at += len(data)
    return work, src, np.frombuffer(b"".join(plain), np.uint8)


@pytest.mark.parametrize("codec", ["SNAPPY", "ZSTD", "GZIP"])
@pytest.mark.parametrize("threads", [1, 3])
def test_every_page_lands_in_its_place(codec: str, threads: int) -> None:
    work, src, expected = pages(codec, 40, seed=7)
    out = np.zeros(expected.size, np.uint8)
    nvcomp.decompress_on_host(work, memoryview(bytes(src)), out, threads=threads)
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("threads", [1, 4])
def test_the_first_damaged_page_is_blamed(threads: int) -> None:
    work, src, expected = pages("SNAPPY", 40, seed=9)
    for k in (29, 11, 17):  # damaged out of order: page 11 is the first in the list
        src[work.src[k]] ^= 0x7F  # the Snappy preamble: another length than the header's
    with pytest.raises(PageError) as e:
        nvcomp.decompress_on_host(work, memoryview(bytes(src)), np.zeros(expected.size, np.uint8), threads=threads)
    assert e.value.column == "column11"
    assert "SNAPPY page does not decompress" in str(e.value)
