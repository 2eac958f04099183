"""Differential tests: penstock against DuckDB on generated tables (see README.md)."""
