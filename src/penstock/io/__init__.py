"""Reading tables: Arrow IPC, Parquet and CSV files, and in-memory Arrow tables."""

from penstock.io.tables import ScanBatch, TableReader, open_table

__all__ = ["ScanBatch", "TableReader", "open_table"]
