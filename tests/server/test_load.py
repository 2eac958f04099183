"""scripts/load_test.py, briefly: 8 clients (simple and extended protocol) for 5 seconds
against a `penstock serve` process over SSB data, every result checked. The full run the
issue asks for (32 clients, 60 s) is in docs/server.md; this keeps CI fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_load_test_runs_clean(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "load_test.py"), "--clients", "8", "--duration", "5",
                           "--sf", "0.01", "--data", str(tmp_path / "data"), "--json", str(out)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["errors"] == 0, report["error_samples"]
    assert report["clients"] == 8 and report["elapsed_s"] >= 5
    total = report["total"]
    assert total["queries"] >= 13 and total["qps"] > 0
    assert 0 < total["p50_ms"] <= total["p90_ms"] <= total["p99_ms"] <= total["max_ms"]
    assert set(report["per_query"]) == {f"Q{f}.{q}" for f, n in ((1, 3), (2, 3), (3, 4), (4, 3)) for q in range(1, n + 1)}
    assert all(s["queries"] > 0 for s in report["per_query"].values()), report["per_query"]
    assert sum(s["queries"] for s in report["per_query"].values()) == total["queries"]
    assert "p99 ms" in proc.stdout and "errors: 0" in proc.stdout
