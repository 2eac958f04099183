"""EXPLAIN and EXPLAIN ANALYZE: pipelines as fused kernels, their device and operators,
per-operator row counts, bytes read and times; join fusion of a star join; fallback."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import penstock

FACT_ROWS = 3000
DIMS = {"da": 10, "dbb": 7, "dc": 5}

STAR = """
SELECT da.attr, sum(f.v) AS total
FROM fact f
JOIN da ON f.ka = da.k
JOIN dbb ON f.kb = dbb.k
JOIN dc ON f.kc = dc.k
WHERE da.g = 0 AND dbb.g = 1 AND dc.attr <> 'dc3'
GROUP BY da.attr
"""


@pytest.fixture(scope="module")
def star_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("star")
    n = np.arange(FACT_ROWS)
    files = {"fact": folder / "fact.parquet"}
    pq.write_table(pa.table({"ka": n % 10, "kb": n % 7, "kc": n % 5, "v": n}), files["fact"])
    for name, size in DIMS.items():
        files[name] = folder / f"{name}.parquet"
        pq.write_table(pa.table({"k": np.arange(size), "attr": [f"{name}{i}" for i in range(size)],
                                 "g": np.arange(size) % 2}), files[name])
    return files


@pytest.fixture
def star_db(star_files: dict[str, Path]) -> Any:
    db = penstock.connect(device="cpu")
    for name, path in star_files.items():
        db.register(name, path)
    return db


def pipelines(text: str) -> list[list[str]]:
    """The explain text's pipeline blocks: header line plus its indented lines."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("Pipeline "):
            current = [line]
            blocks.append(current)
        elif line.startswith(" ") and current is not None:
            current.append(line)
        else:
            current = None
    return blocks


def test_explain_lists_fused_pipelines_device_and_operators(sample_db: Any) -> None:
    text = sample_db.explain("SELECT id, grp FROM t WHERE id > 2")
    device = sample_db.backend.describe()
    assert text.splitlines()[0].startswith("engine: penstock-cpu")
    assert device in text
    blocks = pipelines(text)
    assert len(blocks) == 1
    head = blocks[0][0]
    assert "one fused kernel" in head and device in head
    body = "\n".join(blocks[0])
    scan = re.search(r"Scan t \[([^\]]*)\]", body)
    assert scan is not None and scan.group(1).split(", ") == ["id", "grp"]
    assert "Filter" in body
    assert "Materialize" in body
    # plain EXPLAIN runs nothing
    assert "rows in" not in text and "bytes read" not in text


def test_explain_join_and_aggregate_operators(star_db: Any) -> None:
    text = star_db.explain("SELECT da.attr, count(*) AS n FROM fact f JOIN da ON f.ka = da.k GROUP BY da.attr")
    assert re.search(r"Probe inner join #\d+", text)
    assert "Hash build" in text
    assert "Aggregate by" in text
    assert "Materialize" in text
    assert re.search(r"Scan fact \[ka\]", text)
    assert all("one fused kernel" in b[0] for b in pipelines(text))


def test_explain_analyze_adds_rows_bytes_and_times(sample_db: Any) -> None:
    text = sample_db.explain("SELECT id, grp FROM t WHERE id > 2", analyze=True)
    lines = text.splitlines()
    assert re.search(r"plan: [\d.]+ ms .*compile: [\d.]+ ms .*execute: [\d.]+ ms .*rows: 3", text)
    stats = next(line for line in lines if "bytes read" in line)
    assert re.search(r"bytes read: [\d,]+", stats) and int(re.search(r"bytes read: ([\d,]+)", stats)
                                                          .group(1).replace(",", "")) > 0
    assert re.search(r"read: [\d.]+ ms", stats) and re.search(r"kernels: [\d.]+ ms", stats)
    scan = next(line for line in lines if "Scan t" in line)
    assert "[rows out 6]" in scan
    flt = next(line for line in lines if "Filter" in line)
    assert "[rows in 6 out 3]" in flt
    sink = next(line for line in lines if "Materialize" in line)
    assert "[rows in 3 out 3]" in sink


def test_star_join_is_one_pipeline_over_the_fact_table_with_three_probes(star_db: Any) -> None:
    text = star_db.explain(STAR)
    fact = [b for b in pipelines(text) if any("Scan fact" in line for line in b)]
    assert len(fact) == 1, text
    probes = [line for line in fact[0] if "Probe" in line]
    assert len(probes) == 3, text
    assert all("inner join" in p for p in probes)
    assert any("Aggregate" in line for line in fact[0])
    # each dimension is filtered in its own build pipeline, not after the probes
    for dim in DIMS:
        block = next(b for b in pipelines(text) if any(f"Scan {dim} " in line for line in b))
        assert any("Filter" in line for line in block)


def test_star_join_answer_and_analyze_counts(star_db: Any) -> None:
    n = np.arange(FACT_ROWS)
    keep = (n % 10 % 2 == 0) & (n % 7 % 2 == 1) & (n % 5 != 3)
    expected = {f"da{a}": int(n[keep & (n % 10 == a)].sum()) for a in range(0, 10, 2)
                if (keep & (n % 10 == a)).any()}  # da8 = 3 mod 5: dc3, filtered out
    assert len(expected) == 4
    result = star_db.sql(STAR)
    assert result.engine == "penstock-cpu"
    assert {r["attr"]: r["total"] for r in result.to_arrow().to_pylist()} == expected
    text = star_db.explain(STAR, analyze=True)
    fact = next(b for b in pipelines(text) if any("Scan fact" in line for line in b))
    assert f"[rows out {FACT_ROWS:,}]" in "\n".join(fact)
    last_probe = [line for line in fact if "Probe" in line][-1]
    assert f"out {int(keep.sum()):,}]" in last_probe


def test_explain_of_a_fallback_query_names_the_reason(sample_db: Any) -> None:
    sql = "SELECT row_number() OVER () AS rn FROM t"
    text = sample_db.explain(sql)
    reason = sample_db.sql(sql).fallback_reason
    assert reason
    assert text.splitlines()[0] == f"engine: datafusion (fallback: {reason})"
    assert "one fused kernel" not in text
    analyzed = sample_db.explain(sql, analyze=True)
    assert "engine: datafusion (fallback: " in analyzed
    assert re.search(r"rows: 6 ", analyzed)


def test_explain_analyze_figures_are_the_true_ones(device: str) -> None:
    """The header's compile time is what preparing this statement cost (not the 0 of the
    cached run after it), and an aggregation's rows out are its groups."""
    db = penstock.connect(device=device, strict=True)
    db.register_arrow("t", pa.table({"g": [i % 2 for i in range(1000)], "v": list(range(1000))}))
    text = db.explain("SELECT g, sum(v) AS s FROM t GROUP BY g", analyze=True)
    header = text.splitlines()[1]
    compile_ms = float(re.search(r"compile: ([\d.]+) ms", header).group(1))  # type: ignore[union-attr]
    assert "cache miss" in header and compile_ms > 0
    counts = re.search(r"\((\d+) of (\d+) kernels compiled, (\d+) at a time", header)
    assert counts is not None, header
    done, total, workers = (int(x) for x in counts.groups())
    assert 0 <= done <= total and total >= 2 and workers >= 1  # a pipeline and its finaliser at least
    assert "[rows in 1,000 out 2 groups]" in text
    again = db.explain("SELECT g, sum(v) AS s FROM t GROUP BY g", analyze=True)
    assert "cache hit" in again.splitlines()[1] and "compile: 0.0 ms" in again.splitlines()[1]
    assert "out 1 group]" in db.explain("SELECT count(*) AS n FROM t", analyze=True)


def test_an_explain_statement_answers_penstocks_plan(sample_db: Any) -> None:
    """db.sql and `penstock sql` take EXPLAIN [ANALYZE] as PostgreSQL spells it, and answer
    penstock's plan (not DataFusion's), a line a row; the first run says where its time went."""
    query = "SELECT grp, count(*) AS n FROM t WHERE id > 1 GROUP BY grp"
    plain = sample_db.sql(f"EXPLAIN {query}")
    lines = plain.to_arrow().column("QUERY PLAN").to_pylist()
    assert lines[0].startswith("engine: penstock-cpu") and plain.engine == "penstock-cpu"
    assert not any(line.startswith("plan:") for line in lines)  # not run
    analyzed = sample_db.sql(f"  -- a comment\n/* and another */ explain (analyze true, verbose) {query.lower()}")
    text = "\n".join(analyzed.to_arrow().column(0).to_pylist())
    assert "first run: plan" in text and "rows in" in text and "batches run again" in text
    off = sample_db.sql(f"EXPLAIN (ANALYZE false) {query}").to_arrow().column(0).to_pylist()
    assert not any(line.startswith(("plan:", "first run:")) for line in off)
    again = "\n".join(sample_db.sql(f"EXPLAIN ANALYZE {query}").to_arrow().column(0).to_pylist())
    assert "(cache hit)" in again and "first run:" not in again  # a repeat is no first run
    assert sample_db.sql(query).num_rows == 3  # the query itself still runs as a query


def test_the_cli_prints_an_explain_statement_whole(tmp_path: Path, sample_parquet: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "penstock.cli", "sql", "--device", "cpu", "-t", f"t={sample_parquet}",
                           "EXPLAIN ANALYZE SELECT grp, sum(x) AS s FROM t GROUP BY grp ORDER BY grp"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "DataFusion" not in done.stderr + done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("engine: penstock-cpu") and any(line.startswith("first run: plan") for line in lines)
    assert not any(line.endswith("…") for line in lines)  # whole lines, not a table's cells
