"""Benchmark reports: a text table, JSON, and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path

from penstock.bench.runner import BenchReport


def text_table(r: BenchReport) -> str:
    lines = [f"{r.suite} SF {r.sf:g}, tier {r.tier} ({r.fmt} files), {r.device}; DuckDB: "
             f"{r.duckdb_source or 'not run'}, {r.duckdb_threads} threads; best and median of {r.repeat}",
             f"ceiling ({r.tier}): {r.ceiling:.1f} GB/s{_samples(r)}"
             + (f"; read path: {r.read_path}" if r.read_path else ""),
             "first runs: in a fresh process, empty kernel caches (cold; the installation's precompiled "
             "header kept) and the on-disk kernel cache warm (warm); x duck: DuckDB's best time over penstock's"]
    head = (f"{'query':6} {'rows':>5} {'best ms':>9} {'median ms':>9} {'cold ms':>8} {'warm ms':>8} "
            f"{'GB/s':>6} {'%ceil':>6} {'duck ms':>9} {'x duck':>7} {'cold/duck':>9} {'same':>5}")
    lines += [head, "-" * len(head)]
    for q in r.queries:
        pct = 100 * q.gbps / r.ceiling if r.ceiling else 0.0
        duck = f"{q.duckdb_best_s * 1000:9.2f}" if q.duckdb_best_s is not None else f"{'-':>9}"
        speed = f"{q.speedup:7.1f}" if q.speedup is not None else f"{'-':>7}"
        cold = f"{q.cold_first.seconds * 1000:8.0f}" if q.cold_first else f"{'-':>8}"
        warm = f"{q.warm_first.seconds * 1000:8.0f}" if q.warm_first else f"{'-':>8}"
        ratio = f"{q.first_vs_duckdb:9.1f}" if q.first_vs_duckdb is not None else f"{'-':>9}"
        same = {True: "yes", False: "NO", None: "-"}[q.matches_duckdb]
        lines.append(f"{q.name:6} {q.rows:5d} {q.best_s * 1000:9.2f} {q.median_s * 1000:9.2f} {cold} {warm} "
                     f"{q.gbps:6.1f} {pct:6.1f} {duck} {speed} {ratio} {same:>5}")
    t = r.to_json()["totals"]
    total_speed = f"{t['speedup_vs_duckdb']:.1f}x DuckDB" if t["speedup_vs_duckdb"] else "no DuckDB run"
    gbps = t["gbps"] or 0.0
    lines.append(f"total: penstock {t['penstock_best_s'] * 1000:.1f} ms, {gbps:.1f} GB/s "
                 f"({100 * gbps / r.ceiling if r.ceiling else 0:.0f}% of the ceiling); {total_speed}")
    means = [f"{label} {t[key] * 1000:.1f} ms" for key, label in
             (("geomean_best_s", "repeats"), ("geomean_cold_first_s", "cold first runs"),
              ("geomean_warm_first_s", "warm first runs"), ("geomean_duckdb_s", "DuckDB")) if t.get(key)]
    lines.append("geomean: " + ", ".join(means))
    return "\n".join(lines)


def _samples(r: BenchReport) -> str:
    got = r.ceiling_samples.get(r.tier, [])
    return f" (mean of {got[0]:.1f} before and {got[1]:.1f} after the runs)" if len(got) == 2 else ""


def write_reports(r: BenchReport, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{r.name}-sf{r.sf:g}-{r.tier}"
    paths = [out / f"{stem}.txt", out / f"{stem}.json"]
    paths[0].write_text(text_table(r) + "\n")
    paths[1].write_text(json.dumps(r.to_json(), indent=1))
    png = chart(r, out / f"{stem}.png")
    return paths + ([png] if png else [])


def chart(r: BenchReport, path: Path) -> Path | None:
    """Bars: penstock's GB/s per query against the ceiling, the speed-up over DuckDB, and the
    first runs (cold, warm) and best repeat beside DuckDB's time."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = [q.name for q in r.queries]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(19, 4.5))
    a.bar(names, [q.gbps for q in r.queries], color="#2b6cb0")
    if r.ceiling:
        a.axhline(r.ceiling, color="#c53030", linestyle="--", label=f"ceiling {r.ceiling:.0f} GB/s")
        a.legend()
    a.set_ylabel("GB/s over referenced columns")
    a.set_title(f"penstock, {r.suite} SF {r.sf:g}, tier {r.tier}")
    b.bar(names, [q.speedup or 0 for q in r.queries], color="#2f855a")
    b.axhline(1, color="black", linewidth=0.8)
    b.set_ylabel("speed-up over DuckDB (x)")
    b.set_title("penstock / DuckDB (best of runs)")
    at = list(range(len(names)))
    series = [("cold first run", [q.cold_first.seconds if q.cold_first else 0 for q in r.queries], "#c05621"),
              ("warm first run", [q.warm_first.seconds if q.warm_first else 0 for q in r.queries], "#d69e2e"),
              ("best repeat", [q.best_s for q in r.queries], "#2b6cb0"),
              ("DuckDB", [q.duckdb_best_s or 0 for q in r.queries], "#718096")]
    for k, (label, values, color) in enumerate(series):
        c.bar([x + (k - 1.5) * 0.2 for x in at], [v * 1000 for v in values], 0.2, label=label, color=color)
    c.set_xticks(at, names)
    c.set_yscale("log")
    c.set_ylabel("ms (log)")
    c.set_title("first runs and repeats beside DuckDB")
    c.legend(fontsize=8)
    for ax in (a, b, c):
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
