"""The out-of-core sort on the GPU (`penstock sort --device gpu`): chunks sorted as radix
sorts of key words under CuPy, compared with DuckDB's ORDER BY over the same file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.exec.spill.sort.chunk_sort_words import WordChunkSorter
from penstock.exec.spill.sort.external_sort import parse_keys, sort_files
from .test_chunk_sort_words import ORDERS, mixed, same_keys

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gpu-sort") / "mixed.parquet"
    pq.write_table(mixed(400_000, seed=7), path, row_group_size=20_000)
    return path


@pytest.mark.parametrize("by, order_by", ORDERS)
def test_one_chunk_on_the_gpu(by: str, order_by: str) -> None:
    import cupy

    rows = mixed(50_000)  # noqa: F841 - DuckDB reads the local by name
    want = duckdb.sql(f"SELECT * FROM rows ORDER BY {order_by}").to_arrow_table()
    [(bucket, got)] = WordChunkSorter(parse_keys(by), cupy).sort_and_cut(rows)
    same_keys(got, want, by)
    assert sorted(got.column("payload").to_pylist()) == sorted(want.column("payload").to_pylist())


@pytest.mark.parametrize("by, order_by", [("k", "k"), ("k:desc,f", "k DESC, f NULLS LAST"),
                                           ("m,ts:desc", "m NULLS LAST, ts DESC NULLS FIRST"),
                                           ("f:nulls_first", "f NULLS FIRST")])
def test_past_the_gpu_budget(tmp_path: Path, source: Path, by: str, order_by: str) -> None:
    """A 4 MiB GPU budget and 8 MiB of host memory for about 40 MiB of rows: many chunks
    and buckets, the skewed key dealt, every row back in DuckDB's order."""
    out = tmp_path / "sorted.parquet"
    report = sort_files(source, parse_keys(by), out, memory_limit=4 << 20, host_memory_limit=8 << 20,
                        spill_dir=tmp_path / "spill", device="gpu")
    assert report.device == "gpu" and report.rows == 400_000 and report.chunks > 10 and report.buckets > 10
    assert report.oversized_buckets == 0
    got = pq.read_table(out)
    want = duckdb.sql(f"SELECT * FROM read_parquet('{source}') ORDER BY {order_by}").to_arrow_table()
    same_keys(got, want, by)
    assert sorted(got.column("payload").to_pylist()) == sorted(want.column("payload").to_pylist())
    assert list((tmp_path / "spill").iterdir()) == []


def test_text_keys_sort_on_the_host_and_say_so(tmp_path: Path, source: Path) -> None:
    report = sort_files(source, parse_keys("payload"), tmp_path / "o.arrow", memory_limit=4 << 20, device="gpu")
    assert report.device == "host" and "fixed-width" in report.why_host
    got = pa.ipc.open_file(str(tmp_path / "o.arrow")).read_all().column("payload").to_pylist()
    assert got == sorted(got)


def test_the_command_line_on_the_gpu(tmp_path: Path, source: Path) -> None:
    out = tmp_path / "cli.parquet"
    done = subprocess.run([sys.executable, "-m", "penstock.cli", "sort", str(source), "--by", "k:desc", "--out",
                           str(out), "--device", "gpu", "--memory-limit", "8MiB", "--host-memory-limit", "16MiB"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "on the gpu" in done.stdout
    got = pq.read_table(out).column("k").to_pylist()
    assert got == sorted(got, reverse=True) and len(got) == 400_000
