"""Benchmark data generators (SSB, TPC-H) and their query sets."""

from penstock.datagen.ssb import ROWS_PER_GROUP, generate_ssb, register_ssb, ssb_present, table_path
from penstock.datagen.ssb_queries import SSB_QUERIES
from penstock.datagen.tpch import generate_tpch, register_tpch, tpch_present
from penstock.datagen.tpch_queries import TPCH_QUERIES, tpch_queries

__all__ = ["ROWS_PER_GROUP", "SSB_QUERIES", "TPCH_QUERIES", "generate_ssb", "generate_tpch",
           "register_ssb", "register_tpch", "ssb_present", "table_path", "tpch_present", "tpch_queries"]
