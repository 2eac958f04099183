"""device/prebuild.py and `penstock prebuild`: kernels no query shapes are compiled once,
into the installation cache, and a new process with an empty kernel cache compiles only
its query's own kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from penstock.bench.first_run import fresh_first_run
from penstock.codegen.fixed_kernels import installation_kernels
from penstock.io.parquet.device.kernels import decode_kernels


def installation_names() -> set[str]:
    """Kernels `penstock prebuild` makes: those no query shapes, the Parquet decoders and the plan
    interpreter."""
    return {k.name for k in installation_kernels()} | {s.name for s in decode_kernels()} | {"interpret"}


def test_prebuild_then_a_new_process_compiles_only_its_query(tmp_path: Path) -> None:
    env = dict(os.environ, PENSTOCK_CACHE_DIR=str(tmp_path / "cache"), PENSTOCK_INSTALL_CACHE=str(tmp_path / "inst"))
    done = subprocess.run([sys.executable, "-m", "penstock.cli", "prebuild", "--device", "cpu"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{len(installation_names())} installation kernels ready" in done.stdout
    assert "library kernels: none to compile on the CPU backend" in done.stdout
    built = {p.name.split("-")[0] for p in (tmp_path / "inst" / "kernels").iterdir()}
    assert built == installation_names()
    assert list((tmp_path / "inst" / "pch").glob("*/prelude.h.gch"))

    pq.write_table(pa.table({"k": list(range(100)), "s": [f"t{i}" for i in range(100)]}), tmp_path / "d.parquet")
    pq.write_table(pa.table({"k": [1, 2, 3], "w": [10, 20, 30]}), tmp_path / "w.parquet")
    sql = "SELECT d.s, w.w FROM d JOIN w ON d.k = w.k ORDER BY w.w"  # text moves and a direct map
    os.environ["PENSTOCK_INSTALL_CACHE"] = str(tmp_path / "inst")
    try:
        run = fresh_first_run("cpu", {"d": tmp_path / "d.parquet", "w": tmp_path / "w.parquet"}, sql,
                              tmp_path / "fresh")
    finally:
        del os.environ["PENSTOCK_INSTALL_CACHE"]
    assert run.rows == 3 and run.engine == "penstock-cpu"
    compiled = {p.name.split("-")[0] for p in (tmp_path / "fresh" / "kernels").iterdir()}
    assert compiled and not compiled & installation_names()
