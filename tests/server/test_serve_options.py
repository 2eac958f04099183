"""`penstock serve`'s budget options reach the server's connection: --memory-limit (or its
older name --gpu-memory-limit), --host-memory-limit and --spill-dir."""

from __future__ import annotations

import argparse
from pathlib import Path

from penstock.server.cli import add_commands, server_config
from penstock.server.database import Database


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_budget_options_reach_the_connection(tmp_path: Path) -> None:
    args = parse("--data", str(tmp_path / "data"), "--device", "cpu", "--memory-limit", "0.5",
                 "--host-memory-limit", "2", "--spill-dir", str(tmp_path / "spill"))
    config = server_config(args)
    assert (config.gpu_memory_limit, config.host_memory_limit) == (1 << 29, 2 << 30)
    db = Database(config)
    assert db.conn.memory_limit == 1 << 29
    assert db.conn.host_memory_limit == 2 << 30 and db.conn.spill_dir == str(tmp_path / "spill")
    older = server_config(parse("--data", str(tmp_path / "data"), "--gpu-memory-limit", "1"))
    assert older.gpu_memory_limit == 1 << 30 and older.host_memory_limit is None and older.spill_dir is None
