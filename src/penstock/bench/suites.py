"""The benchmarks `penstock bench` runs: their tables, queries, data and warm-up query."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Suite:
    name: str  # ssb | tpch: the command's word, the report files' stem
    title: str  # SSB | TPC-H
    tables: tuple[str, ...]
    largest: str  # the table whose file the hardware ceiling is measured on
    # a small query of a shape no benchmark query has: run first in the bench process, so
    # that loading CUDA libraries and CuPy's own kernels is not charged to one query
    warm_up: str
    queries: Callable[[float], dict[str, str]]
    generate: Callable[[Path, float, str], object]
    table_path: Callable[[Path, str, str], Path]

    def files(self, data: Path, fmt: str) -> dict[str, Path]:
        return {t: self.table_path(data, t, fmt) for t in self.tables}

    def present(self, data: Path, fmt: str) -> bool:
        return all(path.is_file() for path in self.files(data, fmt).values())


def _ssb_queries(sf: float) -> dict[str, str]:
    from penstock.datagen.ssb_queries import SSB_QUERIES

    return dict(SSB_QUERIES)


def _ssb_generate(data: Path, sf: float, fmt: str) -> object:
    from penstock.datagen import generate_ssb

    return generate_ssb(data, sf, fmt=fmt, progress=True)


def _tpch_queries(sf: float) -> dict[str, str]:
    from penstock.datagen.tpch_queries import tpch_queries

    return tpch_queries(sf)


def _tpch_generate(data: Path, sf: float, fmt: str) -> object:
    from penstock.datagen import generate_tpch

    return generate_tpch(data, sf, fmt=fmt, progress=True)


def _table_path(data: Path, table: str, fmt: str) -> Path:
    from penstock.datagen.ssb import table_path

    return table_path(data, table, fmt)


def _suites() -> dict[str, Suite]:
    from penstock.datagen.ssb_tables import TABLES as SSB_TABLES
    from penstock.datagen.tpch_tables import TABLES as TPCH_TABLES

    return {
        "ssb": Suite("ssb", "SSB", tuple(SSB_TABLES), "lineorder",
                     "SELECT d_yearmonth, count(*) FROM date WHERE d_year > 1900 GROUP BY d_yearmonth ORDER BY 1",
                     _ssb_queries, _ssb_generate, _table_path),
        "tpch": Suite("tpch", "TPC-H", tuple(TPCH_TABLES), "lineitem",
                      "SELECT r_name, count(*) FROM region WHERE r_regionkey >= 0 GROUP BY r_name ORDER BY 1",
                      _tpch_queries, _tpch_generate, _table_path),
    }


def suite(name: str) -> Suite:
    return _suites()[name]
