"""GPU smoke check of the device Parquet decoder (not committed)."""
import sys, time, numpy as np, pyarrow as pa, pyarrow.parquet as pq, decimal
from pathlib import Path
from penstock.device.registry import get_backend
from penstock.io.parquet_device.decoder import RowGroupDecoder
from penstock.io.device_batch import batch_to_arrow
from penstock.plan import types as T
from penstock.io.parquet_device.nvcomp import nvcomp_library
print("nvcomp:", nvcomp_library())
be = get_backend(sys.argv[1] if len(sys.argv) > 1 else "gpu", None)
rng = np.random.default_rng(1); n = 200000
t = pa.table({
  "i": pa.array(rng.integers(-2**40, 2**40, n)),
  "i32n": pa.array([None if k % 7 == 0 else int(k) for k in rng.integers(-1000, 1000, n)], pa.int32()),
  "f": pa.array(rng.random(n)),
  "s": pa.array([None if k % 5 == 0 else f"str{k}" for k in rng.integers(0, 300, n)]),
  "p": pa.array([f"plain-{k}-" * (k % 3) for k in range(n)]),
  "d": pa.array([None if k % 11 == 0 else decimal.Decimal(int(k)) / 100 for k in rng.integers(0, 10**6, n)], pa.decimal128(12, 2)),
  "dt": pa.array(rng.integers(0, 20000, n).astype("int32")).cast(pa.date32()),
  "i8": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
})
bad = 0
for kw in [dict(compression="snappy"), dict(compression="zstd", data_page_version="2.0"), dict(compression="none", use_dictionary=False, data_page_size=1000), dict(compression="gzip", row_group_size=7000), dict(compression="lz4")]:
    path = Path("/tmp/pqcheck.parquet"); pq.write_table(t, path, **kw)
    f = pq.ParquetFile(path); names = t.column_names
    types = [T.from_arrow(f.schema_arrow.field(c).type) for c in names]
    dec = RowGroupDecoder(be, path, f, names, types)
    parts = [batch_to_arrow(dec.decode(g), names, be) for g in range(f.metadata.num_row_groups)]
    got = pa.Table.from_batches(parts); want = f.read()
    ok = all(got.column(c).to_pylist() == want.column(c).cast(got.column(c).type).to_pylist() for c in names)
    bad += not ok
    print(kw, "host:", dec.host_columns, "decompression:", dec.decompression, "equal:", ok, flush=True)
print("RESULT", "ok" if not bad else f"{bad} differ")
