"""Mistakes on the `penstock` command line, run as a user runs them (a subprocess): each
prints one line saying what is wrong, never a traceback, and exits non-zero; --version and
the defaults in every option's help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def penstock(*argv: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "penstock.cli", *argv], capture_output=True, text=True,
                          input=stdin if stdin is not None else "", cwd=cwd, timeout=120,
                          env={**os.environ, "PENSTOCK_TRACEBACK": ""})


def one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith(("usage:", " "))]
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize("argv, words", [
    (("gen", "ssb", "--sf", "0", "--out", "x"), ("scale factor", "0")),
    (("gen", "ssb", "--sf", "-1", "--out", "x"), ("scale factor", "-1")),
    (("gen", "ssb", "--sf", "inf", "--out", "x"), ("scale factor", "inf")),
    (("gen", "ssb", "--sf", "abc", "--out", "x"), ("--sf", "abc")),
    (("demo", "--sf", "0"), ("--sf", "positive")),
    (("sql", "-f", "nofile.sql"), ("nofile.sql", "No such file")),
    (("sql", "-o", "nodir/x.csv", "SELECT 1 AS a"), ("nodir/x.csv", "No such file")),
    (("sql", "SELEC 1"), ("syntax error",)),
    (("user", "add", "bad:name", "--users", "users.txt", "--password-stdin"), ("bad:name",)),
    (("sql", "-t", "t=x.csv?compression=gzip", "SELECT 1"), ("unknown option", "compression")),
    (("sql", "-t", "t=x.csv?header=maybe", "SELECT 1"), ("header", "maybe")),
])
def test_a_mistake_is_one_line_and_a_nonzero_exit(tmp_path: Path, argv: tuple[str, ...],
                                                  words: tuple[str, ...]) -> None:
    one_line_error(penstock(*argv, stdin="secret\n", cwd=tmp_path), *words)


def test_gen_into_a_directory_that_cannot_be_made(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    one_line_error(penstock("gen", "ssb", "--sf", "0.001", "--out", str(blocker / "ssb"), cwd=tmp_path),
                   str(blocker))


def test_user_add_without_a_password(tmp_path: Path) -> None:
    proc = penstock("user", "add", "dave", "--users", "users.txt", cwd=tmp_path)  # stdin is empty
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "no password given" in proc.stderr
    assert not (tmp_path / "users.txt").exists()


def test_version() -> None:
    proc = penstock("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("penstock ") and proc.stdout.split()[1][0].isdigit()


@pytest.mark.parametrize("argv, default", [(("gen",), "(default: parquet)"), (("serve",), "(default: 5433)"),
                                          (("bench", "ssb"), "(default: 5)"), (("sql",), "(default: auto)")])
def test_help_shows_defaults(argv: tuple[str, ...], default: str) -> None:
    proc = penstock(*argv, "--help")
    assert proc.returncode == 0
    assert default in " ".join(proc.stdout.split())


def test_table_options_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("1;x\n2;y\nbad;z\n")
    proc = penstock("sql", "--strict", "--device", "cpu", "-t",
                    "t=data.txt?format=csv&delimiter=;&header=false&columns=a int,b text&skip_bad_rows=true",
                    "SELECT sum(a) AS s, count(*) AS n FROM t", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[2].split() == ["3", "|", "2"]
    assert "skipped 1 bad row of table t" in proc.stderr
