"""The server's commands: `penstock serve` and `penstock user add`."""

from __future__ import annotations

import argparse
import getpass
import logging
import signal
import sys
from typing import Any

SHUTDOWN_GRACE = 10.0  # seconds sessions have to end at SIGTERM (their queries are cancelled)


def add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("serve", help="serve the tables of a data directory over the PostgreSQL protocol",
                       description="A PostgreSQL-protocol server: psql, drivers, BI tools and postgres_fdw "
                                   "connect to it. Tables live in DIR's catalog (CREATE EXTERNAL TABLE).")
    s.add_argument("--data", required=True, metavar="DIR", help="data directory: catalog and CREATE TABLE AS files")
    s.add_argument("--data-root", action="append", default=[], metavar="PATH",
                   help="another directory table locations may lie in (repeatable; DIR always may)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=5433)
    s.add_argument("--auth", choices=["trust", "scram"], default="scram",
                   help="scram (default): passwords checked against --users; trust: no password (loopback only)")
    s.add_argument("--users", metavar="FILE", help="users file of SCRAM-SHA-256 verifiers (penstock user add)")
    s.add_argument("--trust-remote", action="store_true", help="allow --auth trust from other hosts")
    s.add_argument("--tls-cert", metavar="F")
    s.add_argument("--tls-key", metavar="F")
    s.add_argument("--admin", action="append", default=[], metavar="USER",
                   help="an administrator: reads and drops every table, sets server-wide settings (repeatable; "
                        "with --auth trust and none named, every user is one)")
    s.add_argument("--file-reader", action="append", default=[], metavar="USER",
                   help="may create external tables over files in the data roots (repeatable; administrators may)")
    s.add_argument("--max-connections", type=int, default=64)
    s.add_argument("--max-startup-connections", type=int, default=32,
                   help="connections still logging in; more are refused at once")
    s.add_argument("--authentication-timeout", type=float, default=60.0, metavar="S",
                   help="seconds a connection has to log in, in all")
    s.add_argument("--max-message-mb", type=int, default=64, help="largest client message accepted (MiB)")
    s.add_argument("--max-statement-kb", type=int, default=1024,
                   help="longest statement accepted (KiB): longer ones are refused with 54000")
    s.add_argument("--device", default="auto", help="auto | gpu | cpu")
    s.add_argument("--memory-limit", "--gpu-memory-limit", dest="memory_limit", type=float, metavar="GiB",
                   help="cap on the executing device's memory (the GPU's; host memory on the CPU backend)")
    s.add_argument("--host-memory-limit", type=float, metavar="GiB", help="host memory for staging and spilling")
    s.add_argument("--spill-dir", metavar="DIR", help="where spill files go (default: spill/ in the cache directory)")
    s.add_argument("--gpu-slots", type=int, default=4, help="queries running on the GPU at once (each gets a "
                   "share of its memory)")
    s.add_argument("--cache", action="append", default=[], metavar="TABLE",
                   help="keep this table's columns in GPU memory, shared by all sessions (repeatable)")
    s.add_argument("--cache-limit", type=float, metavar="GiB", help="GPU memory for --cache tables "
                   "(default: half the budget)")
    s.set_defaults(run=cmd_serve)

    u = sub.add_parser("user", help="manage the users file of `penstock serve --auth scram`")
    usub = u.add_subparsers(dest="user_command", required=True)
    a = usub.add_parser("add", help="add or change a user's password (stored as a salted SCRAM verifier)")
    a.add_argument("name")
    a.add_argument("--users", required=True, metavar="FILE")
    a.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    a.set_defaults(run=cmd_user_add)


def server_config(args: argparse.Namespace) -> Any:
    """The ServerConfig of `penstock serve`'s arguments (sizes in GiB become bytes)."""
    from penstock.server.database import ServerConfig

    def gib(value: float | None) -> int | None:
        return int(value * 2**30) if value else None

    return ServerConfig(
        data_dir=args.data, roots=args.data_root, host=args.host, port=args.port, auth=args.auth,
        users_file=args.users, tls_cert=args.tls_cert, tls_key=args.tls_key,
        max_connections=args.max_connections, max_startup_connections=args.max_startup_connections,
        authentication_timeout=args.authentication_timeout, max_statement_bytes=args.max_statement_kb << 10,
        admins=args.admin, file_readers=args.file_reader,
        max_message_bytes=args.max_message_mb << 20, device=args.device,
        gpu_memory_limit=gib(args.memory_limit), host_memory_limit=gib(args.host_memory_limit),
        spill_dir=args.spill_dir, gpu_slots=args.gpu_slots, trust_remote=args.trust_remote, cache=args.cache,
        cache_limit=gib(args.cache_limit))


def cmd_serve(args: argparse.Namespace) -> int:
    from penstock.errors import PenstockError
    from penstock.server.server import Server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = server_config(args)
    try:
        server = Server(config)
    except (ValueError, OSError, PenstockError) as e:
        print(f"penstock serve: {e}", file=sys.stderr)
        return 2
    port = server.bind()
    db = server.db
    for name, problem in db.problems.items():
        print(f"warning: table {name}: {problem}", file=sys.stderr)
    for path in db.leftovers_removed:
        print(f"removed {path}: left by a server or query that did not finish", file=sys.stderr)
    if config.users_file and db.locations.inside_roots(config.users_file):
        print(f"note: the users file {config.users_file} lies inside a data root; no table may read it, "
              "but keep it outside them (docs/server.md)", file=sys.stderr)
    print(f"penstock serve: {len(db.table_names())} tables from {db.catalog.directory}, engine "
          f"{db.conn.backend.engine} ({db.conn.backend.describe()}), listening on {config.host}:{port} "
          f"(auth {config.auth}{', TLS' if server.tls else ''})", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: server.shutdown())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.shutdown()
    left = server.end_sessions(SHUTDOWN_GRACE)
    print(f"penstock serve: shut down{f' ({left} sessions did not end in time)' if left else ''}",
          file=sys.stderr, flush=True)
    return 0


def cmd_user_add(args: argparse.Namespace) -> int:
    from penstock.server.protocol.scram import save_user

    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        try:
            password = getpass.getpass(f"password for {args.name}: ")
            again = getpass.getpass("again: ")
        except EOFError:  # no terminal and nothing on standard input
            print("penstock user add: no password given (type it at a terminal, or pipe it with "
                  "--password-stdin)", file=sys.stderr)
            return 1
        if again != password:
            print("passwords do not match", file=sys.stderr)
            return 1
    if not password:
        print("an empty password is not allowed", file=sys.stderr)
        return 1
    try:
        save_user(args.users, args.name, password)
    except ValueError as e:  # a name the users file cannot hold
        print(f"penstock user add: {e}", file=sys.stderr)
        return 1
    print(f"user {args.name} saved in {args.users}", file=sys.stderr)
    return 0
