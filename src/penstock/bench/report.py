"""Benchmark reports: a text table, JSON, and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path

from penstock.bench.ssb_bench import SsbReport


def text_table(r: SsbReport) -> str:
    lines = [f"SSB SF {r.sf:g}, tier {r.tier} ({r.fmt} files), {r.device}; DuckDB: in-memory tables, "
             f"{r.duckdb_threads} threads; best and median of {r.repeat}",
             f"ceiling ({r.tier}): {r.ceiling:.1f} GB/s{_samples(r)}"
             + (f"; read path: {r.read_path}" if r.read_path else "")]
    head = (f"{'query':6} {'rows':>5} {'best ms':>9} {'median ms':>9} {'first ms':>9} {'ovh ms':>7} "
            f"{'MB read':>9} {'GB/s':>7} {'%ceil':>6} {'duck ms':>9} {'x duck':>7} {'same':>5}")
    lines += [head, "-" * len(head)]
    for q in r.queries:
        pct = 100 * q.gbps / r.ceiling if r.ceiling else 0.0
        duck = f"{q.duckdb_best_s * 1000:9.2f}" if q.duckdb_best_s is not None else f"{'-':>9}"
        speed = f"{q.speedup:7.1f}" if q.speedup is not None else f"{'-':>7}"
        same = {True: "yes", False: "NO", None: "-"}[q.matches_duckdb]
        lines.append(f"{q.name:6} {q.rows:5d} {q.best_s * 1000:9.2f} {q.median_s * 1000:9.2f} "
                     f"{q.first_run_s * 1000:9.0f} {q.overhead_s * 1000:7.2f} {q.bytes / 1e6:9.1f} "
                     f"{q.gbps:7.1f} {pct:6.1f} {duck} {speed} {same:>5}")
    t = r.to_json()["totals"]
    total_speed = f"{t['speedup_vs_duckdb']:.1f}x DuckDB" if t["speedup_vs_duckdb"] else "no DuckDB run"
    gbps = t["gbps"] or 0.0
    lines.append(f"total: penstock {t['penstock_best_s'] * 1000:.1f} ms, {gbps:.1f} GB/s "
                 f"({100 * gbps / r.ceiling if r.ceiling else 0:.0f}% of the ceiling); {total_speed}")
    return "\n".join(lines)


def _samples(r: SsbReport) -> str:
    got = r.ceiling_samples.get(r.tier, [])
    return f" (mean of {got[0]:.1f} before and {got[1]:.1f} after the runs)" if len(got) == 2 else ""


def write_reports(r: SsbReport, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"ssb-sf{r.sf:g}-{r.tier}"
    paths = [out / f"{stem}.txt", out / f"{stem}.json"]
    paths[0].write_text(text_table(r) + "\n")
    paths[1].write_text(json.dumps(r.to_json(), indent=1))
    png = chart(r, out / f"{stem}.png")
    return paths + ([png] if png else [])


def chart(r: SsbReport, path: Path) -> Path | None:
    """Bars: penstock's GB/s per query against the ceiling, and the speed-up over DuckDB."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = [q.name for q in r.queries]
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
    a.bar(names, [q.gbps for q in r.queries], color="#2b6cb0")
    if r.ceiling:
        a.axhline(r.ceiling, color="#c53030", linestyle="--", label=f"ceiling {r.ceiling:.0f} GB/s")
        a.legend()
    a.set_ylabel("GB/s over referenced columns")
    a.set_title(f"penstock, SSB SF {r.sf:g}, tier {r.tier}")
    b.bar(names, [q.speedup or 0 for q in r.queries], color="#2f855a")
    b.axhline(1, color="black", linewidth=0.8)
    b.set_ylabel("speed-up over DuckDB (x)")
    b.set_title("penstock / DuckDB (best of runs)")
    for ax in (a, b):
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
