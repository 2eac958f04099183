"""Benchmark data generators (SSB) and their query sets."""

from penstock.datagen.ssb import ROWS_PER_GROUP, generate_ssb, register_ssb, ssb_present, table_path
from penstock.datagen.ssb_queries import SSB_QUERIES

__all__ = ["ROWS_PER_GROUP", "SSB_QUERIES", "generate_ssb", "register_ssb", "ssb_present", "table_path"]
