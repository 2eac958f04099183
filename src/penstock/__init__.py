"""penstock: SQL over Arrow, Parquet and CSV files, run by kernels generated per query for
NVIDIA GPUs and for CPU cores.

    import penstock
    db = penstock.connect()                     # device="auto" | "cpu" | "gpu"
    db.register("lineorder", "data/ssb/lineorder.parquet")
    print(db.sql("SELECT count(*) FROM lineorder").to_arrow())
"""

from penstock.api import Connection, Result, connect
from penstock.errors import FileError, PenstockError, QueryError, Unsupported

__version__ = "0.1.0"
__all__ = ["connect", "Connection", "Result", "QueryError", "Unsupported", "FileError", "PenstockError"]
