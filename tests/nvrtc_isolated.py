"""NVRTC compiles for tests, in a child process.

Loading NVRTC into a process changes how psycopg's C extension renders some values (a
negative Decimal is quoted with a NUL byte where a space belongs), which breaks the server
tests that share a pytest worker with kernel-compile tests. The penstock server itself never
loads psycopg, so only the test process needs this isolation.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from penstock.device.nvrtc import NvrtcResult, nvrtc_compile

_POOL: list[ProcessPoolExecutor] = []


def compile_isolated(source: str, name: str = "kernel.cu") -> NvrtcResult:
    if not _POOL:
        _POOL.append(ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")))
    return _POOL[0].submit(nvrtc_compile, source, name).result()
