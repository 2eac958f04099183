"""The `penstock` command.

    penstock sql -t lineorder=data/ssb/lineorder.parquet "SELECT count(*) FROM lineorder"
    penstock explain --analyze -t t=data.parquet "SELECT ..."
    penstock gen ssb --sf 1 --out data/ssb --format parquet
    penstock gen tpch --sf 1 --out data/tpch --format parquet   (dbgen's data, via tpchgen-cli)
    penstock demo
    penstock serve --data DIR --auth trust          (PostgreSQL protocol, port 5433)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from penstock.errors import PenstockError, QueryError, Unsupported
from penstock.commands.output import FORMATS, format_table, write_result
from penstock.connection.explain import explain_request


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except OSError as e:  # a file or directory the command was given: one line, no traceback
        where = f' "{e.filename}"' if e.filename else ""
        print(f"ERROR:  could not use{where}: {e.strerror or e}", file=sys.stderr)
        return 1
    except QueryError as e:
        where = f" at position {e.position}" if e.position else ""
        print(f"ERROR:  {e.message}{where} (SQLSTATE {e.sqlstate})", file=sys.stderr)
        return 1
    except Unsupported as e:
        print(f"ERROR:  penstock cannot run this query itself (strict mode): {e}", file=sys.stderr)
        return 1
    except PenstockError as e:
        print(f"ERROR:  {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: one line, the traceback only when asked for
        if os.environ.get("PENSTOCK_TRACEBACK"):
            raise
        print(f"ERROR:  internal error: {type(e).__name__}: {e} (PENSTOCK_TRACEBACK=1 shows where)",
              file=sys.stderr)
        return 1


def positive(text: str) -> float:
    """An argparse type: a number above zero (scale factors)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Every option's help shows its default (argparse's ArgumentDefaultsHelpFormatter skips
    options without a help text of their own)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _show_defaults(child)
        elif action.option_strings and action.default not in (None, False, [], argparse.SUPPRESS) \
                and "%(default)" not in (action.help or ""):
            action.help = f"{action.help or ''} (default: %(default)s)".strip()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="penstock", description="SQL over Arrow, Parquet and CSV files "
                                "with kernels generated per query, on a GPU or CPU cores.")
    p.add_argument("--version", action="version", version=f"penstock {_version()}")
    sub = p.add_subparsers(dest="command")

    def query_args(q: argparse.ArgumentParser) -> None:
        q.add_argument("-t", "--table", action="append", default=[], metavar="NAME=PATH[?OPTIONS]",
                       help="register a file, directory or glob as a table (repeatable); OPTIONS for CSV "
                       "(delimiter, quote, escape and header are sniffed when not given): "
                       "format=csv&delimiter=;&quote=\"&escape=\\&header=false&encoding=latin-1"
                       "&columns=a int,b text&skip_bad_rows=true")
        q.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
        q.add_argument("--strict", action="store_true", help="fail instead of falling back to DataFusion")
        q.add_argument("-f", "--file", help="read the SQL from a file ('-' for standard input)")
        q.add_argument("query", nargs="?", help="the SQL text")

    q = sub.add_parser("sql", help="run a query and print its result")
    query_args(q)
    q.add_argument("--format", default="table", choices=FORMATS,
                   help="json: an array of objects, one per row; a column name seen before gets "
                   "_1, _2, ... (SELECT x, x gives keys x and x_1)")
    q.add_argument("-o", "--output", help="write the result to a file instead of standard output")
    q.set_defaults(run=cmd_sql)

    e = sub.add_parser("explain", help="show the plan: pipelines, operators, device")
    query_args(e)
    e.add_argument("--analyze", action="store_true", help="run it and show rows, bytes and time per operator")
    e.set_defaults(run=cmd_explain)

    g = sub.add_parser("gen", help="generate benchmark data")
    g.add_argument("benchmark", choices=["ssb", "tpch"])
    g.add_argument("--sf", type=float, default=1.0,
                   help="scale factor (1 = 6 M lineorder rows for ssb, 6 M lineitem rows for tpch)")
    g.add_argument("--out", required=True, help="output directory")
    g.add_argument("--format", default="parquet", choices=["parquet", "arrow", "csv"])
    g.add_argument("--seed", type=int, default=1, help="ssb only (tpch is dbgen's fixed data)")
    g.add_argument("--compression", default="snappy", choices=["snappy", "zstd", "lz4", "gzip", "none"],
                   help="tpch only: the Parquet files' codec")
    g.set_defaults(run=cmd_gen)

    from penstock.bench.commands import add_bench_commands

    add_bench_commands(sub, positive)

    from penstock.server.cli import add_commands
    from penstock.commands.sort_command import add_sort_command

    add_commands(sub)
    add_sort_command(sub)

    d = sub.add_parser("demo", help="generate SSB data if needed and run the 13 SSB queries")
    d.add_argument("--sf", type=positive, default=1.0)
    d.add_argument("--data", default=None, help="data directory (default data/ssb-sf<SF>)")
    d.add_argument("--format", default="parquet", choices=["parquet", "arrow", "csv"])
    d.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    d.set_defaults(run=cmd_demo)

    pb = sub.add_parser("prebuild", help="compile what every query shares (kernels no query shapes; on the CPU "
                                         "a precompiled header) once, into the installation cache")
    pb.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    pb.set_defaults(run=cmd_prebuild)
    _show_defaults(p)
    return p


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("penstock")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown"


def connect_with_tables(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    import penstock

    db = penstock.connect(device=args.device, strict=args.strict)
    for spec in args.table:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise PenstockError(f"-t expects NAME=PATH[?OPTIONS], got {spec!r}")
        path, _, query = path.partition("?")
        db.register(name, path, **table_options(query, spec))
    return db


TABLE_OPTIONS = ("format", "delimiter", "quote", "escape", "header", "encoding", "columns", "skip_bad_rows")


def table_options(query: str, spec: str) -> dict[str, Any]:
    """-t t=data.txt?format=csv&delimiter=;&header=false&encoding=latin-1&columns=a int,b text&skip_bad_rows=true
    (delimiter=\\t for a tab; quote= or escape= with no value for none)"""
    from penstock.io.csv.reader import flag

    out: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, sep, value = item.partition("=")
        if not sep or key not in TABLE_OPTIONS:
            raise PenstockError(f"-t {spec!r}: unknown option {item!r} (options: {', '.join(TABLE_OPTIONS)})")
        if key in ("header", "skip_bad_rows"):
            try:
                out[key] = flag(value)
            except ValueError as e:
                raise PenstockError(f"-t {spec!r}: {key}: {e}") from None
        elif key == "columns":
            out["schema"] = declared_columns(value, spec)
        else:
            out[key] = "\t" if value == "\\t" else value
    return out


def declared_columns(text: str, spec: str) -> Any:
    import pyarrow as pa

    from penstock.server.catalog import arrow_type

    fields = []
    for item in filter(None, (c.strip() for c in text.split(","))):
        name, _, sql_type = item.partition(" ")
        try:
            fields.append(pa.field(name, arrow_type(sql_type.strip())))
        except Exception as e:  # an unknown type name
            raise PenstockError(f"-t {spec!r}: column {name}: {e}") from None
    return pa.schema(fields)


def query_text(args: argparse.Namespace) -> str:
    if args.file:
        return sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    if not args.query:
        raise PenstockError("no query given (pass the SQL text, or -f FILE)")
    return args.query


def cmd_sql(args: argparse.Namespace) -> int:
    db = connect_with_tables(args)
    sql = query_text(args)
    result = db.sql(sql)
    for name in db.tables:
        skipped = db.skipped_rows(name)
        if skipped:
            print(f"NOTICE:  skipped {skipped:,} bad row{'s' if skipped != 1 else ''} of table {name} "
                  "(skip_bad_rows)", file=sys.stderr)
    if result.fallback_reason:
        print(f"NOTICE:  ran on DataFusion's CPU engine, not penstock's kernels: {result.fallback_reason}",
              file=sys.stderr)
    if args.output:
        with open(args.output, "wb") as fh:
            write_result(result.to_arrow(), args.format, fh)
        print(f"wrote {result.num_rows} rows to {args.output} ({result.engine}, "
              f"{result.seconds * 1000:.1f} ms)", file=sys.stderr)
    elif args.format == "table" and explain_request(sql) is not None:
        print("\n".join(result.to_arrow().column(0).to_pylist()))  # the plan's lines, whole
    else:
        if args.format == "arrow" and sys.stdout.isatty():
            raise PenstockError("--format arrow writes binary: use -o FILE or a pipe")
        write_result(result.to_arrow(), args.format, sys.stdout.buffer)
        sys.stdout.flush()
        if args.format == "table":
            print(f"engine: {result.engine}  time: {result.seconds * 1000:.1f} ms", file=sys.stderr)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    db = connect_with_tables(args)
    print(db.explain(query_text(args), analyze=args.analyze))
    return 0


def cmd_gen(args: argparse.Namespace) -> int:
    if args.benchmark == "tpch":
        return cmd_gen_tpch(args)
    from penstock.datagen import generate_ssb

    started = time.perf_counter()
    written = generate_ssb(args.out, args.sf, fmt=args.format, seed=args.seed, progress=True)
    files = sum(len(v) for v in written.values())
    print(f"wrote SSB SF {args.sf:g} ({files} files, {args.format}) to {args.out} "
          f"in {time.perf_counter() - started:.1f} s")
    return 0


def cmd_gen_tpch(args: argparse.Namespace) -> int:
    """The eight TPC-H tables; bad --sf, --out or a missing tpchgen-cli are one ERROR line."""
    from penstock.datagen import generate_tpch

    started = time.perf_counter()
    written = generate_tpch(args.out, args.sf, fmt=args.format, progress=True, compression=args.compression)
    files = sum(len(v) for v in written.values())
    codec = f", {args.compression}" if args.format == "parquet" else ""
    print(f"wrote TPC-H SF {args.sf:g} ({files} files, {args.format}{codec}) to {args.out} "
          f"in {time.perf_counter() - started:.1f} s")
    return 0


def cmd_prebuild(args: argparse.Namespace) -> int:
    from penstock.device import get_backend
    from penstock.device.kernel_cache import installation_dir
    from penstock.commands.warm_up import ready_installation

    backend = get_backend(args.device, None)
    kernels, seconds, library = ready_installation(backend)
    print(f"{kernels} installation kernels ready for {backend.describe()} in {installation_dir()} "
          f"({seconds:.1f} s)")
    if backend.name == "cpu":
        print("library kernels: none to compile on the CPU backend")
    else:
        print(f"library kernels the device paths use compiled by a few small queries ({library:.1f} s)")
    # the package's bytecode, as pip writes it: a module a first query imports late (the plan
    # interpreter's translation) was compiled from source in every fresh process, 8-12 ms
    import compileall

    import penstock

    compileall.compile_dir(str(Path(penstock.__file__).parent), quiet=2)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import penstock
    from penstock.datagen import generate_ssb, register_ssb, ssb_present
    from penstock.datagen.ssb_queries import SSB_QUERIES

    data = Path(args.data or f"data/ssb-sf{args.sf:g}")
    if not ssb_present(data, args.format):
        print(f"generating SSB SF {args.sf:g} into {data} ...")
        generate_ssb(data, args.sf, fmt=args.format, progress=True)
    db = penstock.connect(device=args.device)
    register_ssb(db, data, args.format)
    print(f"device: {db.backend.describe()}\n")
    rows = []
    fallbacks = 0
    for name, sql in SSB_QUERIES.items():
        first = db.sql(sql)
        # the repeat runs on the optimised kernels: a first run may have run on the plan
        # interpreter while they compiled (device/tiers.py), and a repeat started at once
        # ran interpreted again beside g++, slower than the first
        db.backend.wait_for_upgrades()
        warm = db.sql(sql)
        fallbacks += warm.engine == "datafusion"
        rows.append({"query": name, "rows": warm.num_rows, "engine": warm.engine,
                     "first run ms": round(first.seconds * 1000, 1), "warm ms": round(warm.seconds * 1000, 1),
                     "fallback": warm.fallback_reason or ""})
        print(f"{name}: {warm.num_rows} rows on {warm.engine}: first run {first.seconds * 1000:.1f} ms "
              f"(kernels compiled or loaded), warm {warm.seconds * 1000:.1f} ms", flush=True)
    import pyarrow as pa

    print()
    print(format_table(pa.Table.from_pylist(rows)))
    print("\nQ1.1 result:")
    print(format_table(db.sql(SSB_QUERIES["Q1.1"]).to_arrow()))
    print("\nQ4.1 result (first 5 rows):")
    print(format_table(db.sql(SSB_QUERIES["Q4.1"]).to_arrow(), max_rows=5))
    if fallbacks:
        print(f"\n{fallbacks} of {len(SSB_QUERIES)} queries fell back to DataFusion", file=sys.stderr)
        return 1
    print(f"\nall {len(SSB_QUERIES)} queries ran on penstock's own kernels ({db.backend.engine})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
