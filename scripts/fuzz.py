#!/usr/bin/env python3
"""Random-query fuzzer for penstock: DuckDB, PostgreSQL and ternary logic partitioning as oracles.

    scripts/fuzz.py --minutes 20 --seed 7 [--device cpu|gpu] [--out fuzz-out] [--pool 2000]
    scripts/fuzz.py --oracle postgresql --minutes 60          # PostgreSQL (and TLP) only
    scripts/fuzz.py --oracles duckdb,postgresql,tlp ...       # any of the three
    scripts/fuzz.py --replay SEED:INDEX [--pool N --pool-offset M] [--out DIR]   # one case

With the PostgreSQL oracle the supervisor starts a throwaway cluster (Debian's server,
tests/server/pg_cluster.py) for the whole run and every worker connects to it.

Runs cases for N minutes (seed S, then S+1, ... each with its own tables, --per-seed cases
each), prints progress (cases, queries, ok, skips, expected errors, failures), and writes
every failure, minimized (smaller query, fewer rows and columns that fail the same way),
into --out as a folder with query.sql, the data, answers.txt and a standalone repro.py.
Failures are grouped by signature (oracle, reason, features of the minimized query);
--max-per-reason bounds how many of one oracle+reason are minimized. summary.json in
--out has the counts, the skip reasons and the failure groups.

The cases run in a worker subprocess: if a kernel brings the process down (a crash is a
failure too), the parent records the case that was running and starts a new worker at
the next case. A CUDA error (sticky: every later query in that process would fail too) is
written unminimized, and the worker is replaced the same way. See tests/fuzz/README.md.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def worker(args: argparse.Namespace) -> int:
    """Run cases from (seed, start) until the deadline; one JSON line per event on stdout."""
    from fuzz.generator import Generator
    from fuzz.minimize import Minimizer
    from fuzz.report import signature, write_failure
    from fuzz.runner import Engines, run_case
    from fuzz.tables import generate

    oracles = oracle_list(args)
    pg = connect_pg(args.pg_dsn) if "postgresql" in oracles else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = args.deadline
    seed, index = args.seed, args.start
    per_reason: collections.Counter[str] = collections.Counter(json.loads(args.reasons or "{}"))
    data_root = Path(tempfile.mkdtemp(prefix="penstock-fuzz-"))

    def emit(**kw: Any) -> None:
        print(json.dumps(kw), flush=True)

    while time.time() < deadline:
        avoid = frozenset(a for a in args.avoid.split(",") if a)
        ds = generate(seed, data_root / f"seed{seed}", avoid)
        eng = Engines(ds, args.device, pg=pg)
        gen = Generator(seed, args.pool or None, args.pool_offset, avoid)
        while index < args.per_seed and time.time() < deadline:
            case = gen.case(index)
            emit(ev="run", seed=seed, index=index)
            outcomes = run_case(eng, case, tlp=not args.no_tlp, oracles=oracles)
            emit(ev="done", seed=seed, index=index, category=case.category,
                 outcomes=[[o.oracle, o.status, o.reason] for o in outcomes])
            for o in outcomes:
                if o.status == "generator" and per_reason["generator"] < 50:
                    per_reason["generator"] += 1
                    with open(out / "generator-errors.txt", "a") as f:
                        f.write(f"{case.name}\n{case.sql}\n{case.duck_sql}\n{o.detail}\n\n")
                if o.status != "fail":
                    continue
                key = f"{o.oracle}|{o.reason}"
                per_reason[key] += 1
                if per_reason[key] > args.max_per_reason:
                    if per_reason[key] <= args.max_per_reason + 200:  # kept, unminimized, for triage
                        with open(out / "unminimized.txt", "a") as f:
                            f.write(f"### {key} | {case.name} | {','.join(case.features())}\n{case.sql}\n"
                                    f"{o.detail[:1200]}\n\n")
                    emit(ev="fail", seed=seed, index=index, key=key, folder=None, signature=None)
                    continue
                if poisons(o):  # every later query in this process fails too: nothing to minimize
                    q, p, small, final, tries = case.query, case.tlp, ds, o, 0
                else:
                    m = Minimizer(eng, o.oracle, o.reason, args.minimize_s)
                    q, p, small = m.run(case.query, case.tlp, ds)
                    final, tries = m.check(q, p) or o, m.tries
                    if final.status != "fail":
                        final = o
                folder = write_failure(out, case.name, q, p, small, final,
                                       {"seed": seed, "index": index, "shape": case.shape,
                                        "original_sql": case.sql, "tries": tries})
                eng.load(ds)
                emit(ev="fail", seed=seed, index=index, key=key, folder=str(folder),
                     signature=signature(final.oracle, final.reason, q))
            if any(o.status == "fail" and poisons(o) for o in outcomes):
                emit(ev="restart", seed=seed, index=index + 1)
                return 3
            index += 1
        eng.close()
        seed, index = seed + 1, 0
    emit(ev="end", seed=seed, index=index)
    return 0


def oracle_list(args: argparse.Namespace) -> tuple[str, ...]:
    """--oracles a,b,c, or --oracle X (X and TLP); unknown names are refused."""
    names = [args.oracle, "tlp"] if args.oracle else args.oracles.split(",")
    names = [n.strip() for n in names if n.strip()]
    bad = [n for n in names if n not in ("duckdb", "postgresql", "tlp")]
    if bad:
        raise SystemExit(f"unknown oracle(s) {bad}: choose from duckdb, postgresql, tlp")
    return tuple(names)


def connect_pg(dsn: str) -> Any:
    from fuzz.postgres import Postgres
    if not dsn:
        raise SystemExit("the PostgreSQL oracle needs --pg-dsn (the supervisor passes its cluster's)")
    return Postgres(dsn)


def poisons(o: Any) -> bool:
    """A CUDA error that leaves the process's context unusable (an illegal address is sticky):
    the worker stops after recording it and the parent starts a fresh one at the next case."""
    return any(word in o.reason or word in o.detail for word in ("CUDARuntimeError", "CUDADriverError"))


def replay(args: argparse.Namespace) -> int:
    """Run one case (SEED:INDEX, with the --pool/--pool-offset it was drawn with), print
    both outcomes, and minimize and write each failure."""
    from fuzz.runner import Engines
    from fuzz.tables import generate

    seed, index = (int(x) for x in args.replay.split(":"))
    avoid = frozenset(a for a in args.avoid.split(",") if a)
    ds = generate(seed, Path(tempfile.mkdtemp(prefix="penstock-fuzz-")) / f"seed{seed}", avoid)
    oracles = oracle_list(args)
    with pg_cluster(oracles, args) as dsn:
        pg = connect_pg(dsn) if "postgresql" in oracles else None
        eng = Engines(ds, args.device, pg=pg)
        return _replay_case(args, eng, ds, seed, index, avoid, oracles)


def _replay_case(args: argparse.Namespace, eng: Any, ds: Any, seed: int, index: int, avoid: frozenset[str],
                 oracles: tuple[str, ...]) -> int:
    from fuzz.generator import Generator
    from fuzz.minimize import Minimizer
    from fuzz.report import write_failure
    from fuzz.runner import run_case

    case = Generator(seed, args.pool or None, args.pool_offset, avoid).case(index)
    print(case.sql)
    failed = 0
    for o in run_case(eng, case, tlp=not args.no_tlp, oracles=oracles):
        print(f"{o.oracle}: {o.key}\n{o.detail}")
        if o.status != "fail":
            continue
        failed += 1
        if poisons(o):
            print("(a CUDA error poisons the process: not minimized)")
            continue
        m = Minimizer(eng, o.oracle, o.reason, args.minimize_s)
        q, p, small = m.run(case.query, case.tlp, ds)
        final = m.check(q, p) or o
        folder = write_failure(Path(args.out), case.name, q, p, small, final if final.status == "fail" else o,
                               {"seed": seed, "index": index, "shape": case.shape, "original_sql": case.sql})
        eng.load(ds)
        print(f"minimized -> {folder}")
    return 1 if failed else 0


@contextlib.contextmanager
def pg_cluster(oracles: tuple[str, ...], args: argparse.Namespace) -> Iterator[str]:
    """The DSN of --pg-dsn, or of a throwaway cluster started here when the PostgreSQL
    oracle is asked for (stopped when the run ends), or "" when it is not."""
    if "postgresql" not in oracles or args.pg_dsn:
        yield args.pg_dsn
        return
    from fuzz.postgres import cluster_dsn
    with cluster_dsn() as dsn:
        yield dsn


def supervise(args: argparse.Namespace) -> int:
    oracles = oracle_list(args)
    with pg_cluster(oracles, args) as dsn:
        args.pg_dsn = dsn
        return _supervise(args, oracles)


def _supervise(args: argparse.Namespace, oracles: tuple[str, ...]) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    deadline = started + args.minutes * 60
    seed, start = args.seed, 0
    cases = queries = 0
    counts: collections.Counter[str] = collections.Counter()
    categories: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    groups: dict[str, list[str]] = collections.defaultdict(list)
    crashes: list[dict[str, Any]] = []
    by_oracle: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    last_print = 0.0

    def write_summary() -> None:
        summary = {"cases": cases, "queries": queries, "minutes": (time.time() - started) / 60,
                   "outcomes": dict(counts), "categories": dict(categories), "failures_by_reason": dict(reasons),
                   "groups": groups, "crashes": crashes, "seed": args.seed, "device": args.device,
                   "pool": args.pool, "oracles": list(oracles), "avoid": args.avoid,
                   "by_oracle": {k: dict(sorted(v.items(), key=lambda kv: -kv[1])) for k, v in by_oracle.items()}}
        (out / "summary.json").write_text(json.dumps(summary, indent=2))

    while time.time() < deadline:
        cmd = [sys.executable, __file__, "--worker", "--seed", str(seed), "--start", str(start),
               "--deadline", str(deadline), "--out", str(out), "--device", args.device,
               "--pool", str(args.pool), "--pool-offset", str(args.pool_offset), "--per-seed", str(args.per_seed),
               "--minimize-s", str(args.minimize_s), "--max-per-reason", str(args.max_per_reason),
               "--avoid", args.avoid, "--reasons", json.dumps(dict(reasons)), "--oracles", ",".join(oracles),
               "--pg-dsn", args.pg_dsn] + (["--no-tlp"] if args.no_tlp else [])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        running: tuple[int, int] | None = None
        restart_at: tuple[int, int] | None = None
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                print(line, end="")
                continue
            if ev["ev"] == "run":
                running = (ev["seed"], ev["index"])
            elif ev["ev"] == "done":
                running = None
                cases += 1
                categories[ev["category"]] += 1
                for oracle, status, reason in ev["outcomes"]:
                    queries += 4 if oracle == "tlp" else 1
                    counts[f"{status}:{reason}" if status in ("skip", "generator", "expected") else status] += 1
                    by_oracle[oracle][f"{status}:{reason}" if reason else status] += 1
            elif ev["ev"] == "restart":
                restart_at = (ev["seed"], ev["index"])
            elif ev["ev"] == "fail":
                reasons[ev["key"]] += 1
                if ev["signature"]:
                    groups[ev["signature"]].append(ev["folder"])
                    print(f"FAILURE {ev['key']} -> {ev['folder']}", flush=True)
            if time.time() - last_print > 20:
                last_print = time.time()
                _progress(started, cases, queries, counts, reasons)
                write_summary()  # also now: a run that is killed keeps its counts
        rc = proc.wait()
        if restart_at is not None:  # the worker's device context was poisoned: a fresh one
            seed, start = restart_at
            continue
        if running is None:
            break
        crashes.append({"seed": running[0], "index": running[1], "returncode": rc})
        print(f"CRASH: worker died (rc {rc}) on seed {running[0]} case {running[1]}", flush=True)
        reasons[f"{oracles[0]}|crash"] += 1
        seed, start = running[0], running[1] + 1
    _progress(started, cases, queries, counts, reasons)
    write_summary()
    print(f"summary: {out / 'summary.json'}; {len(groups)} failure signatures")
    return 1 if reasons else 0


def _progress(started: float, cases: int, queries: int, counts: collections.Counter[str],
              reasons: collections.Counter[str]) -> None:
    skips = sum(v for k, v in counts.items() if k.startswith("skip"))
    expected = sum(v for k, v in counts.items() if k.startswith("expected"))
    gen = sum(v for k, v in counts.items() if k.startswith("generator"))
    print(f"[{(time.time() - started) / 60:5.1f} min] cases {cases}, queries {queries}, ok {counts['ok']}, "
          f"skips {skips}, expected errors {expected}, generator errors {gen}, "
          f"failures {sum(reasons.values())} {dict(reasons)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--out", default="fuzz-out")
    ap.add_argument("--pool", type=int, default=2000, help="shapes to draw from (0: a new shape per case)")
    ap.add_argument("--pool-offset", type=int, default=0, help="first shape of the pool")
    ap.add_argument("--replay", default="", help="SEED:INDEX: run and minimize that one case")
    ap.add_argument("--per-seed", type=int, default=400, help="cases per seed before new tables")
    ap.add_argument("--minimize-s", type=float, default=90.0, help="time budget of one minimization")
    ap.add_argument("--max-per-reason", type=int, default=6, help="failures per oracle+reason to minimize")
    ap.add_argument("--no-tlp", action="store_true")
    ap.add_argument("--oracles", default="duckdb,tlp", help="comma-separated: duckdb, postgresql, tlp")
    ap.add_argument("--oracle", default="", help="one engine oracle (duckdb or postgresql), with TLP")
    ap.add_argument("--pg-dsn", default="", help="a running PostgreSQL to use (default: a throwaway cluster)")
    ap.add_argument("--avoid", default="", help="comma-separated constructs behind bugs already found, "
                    "not generated (exploratory runs): round, early_dates, wide_decimals, sum_int64, "
                    "count_distinct_const; and the classes of generator.FEATURE_CLASSES")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--reasons", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.replay:
        return replay(args)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return supervise(args)


if __name__ == "__main__":
    sys.exit(main())
