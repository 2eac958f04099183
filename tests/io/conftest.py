"""Fixtures of the io tests: the device's shared column cache, emptied around a test."""

from __future__ import annotations

from typing import Iterator

import pytest

from penstock.device import get_backend
from penstock.io.column_cache import ColumnCache, cache_of


@pytest.fixture
def cache(device: str) -> Iterator[ColumnCache]:
    """The device's shared cache (one per process), emptied, with its limit restored afterwards."""
    shared = cache_of(get_backend(device))
    limit = shared.limit
    shared.drop()
    yield shared
    shared.drop()
    shared.limit = limit
