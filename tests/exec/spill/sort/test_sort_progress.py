"""A sort's progress lines (exec/spill/sort/sort_progress.py, commands/sort_command.py): never the
same line twice, counters that only grow, each phase's last line with its totals, at most one
line an interval but for final ones, rewritten in place on a terminal."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from penstock.commands.sort_command import ProgressLines, summary
from penstock.exec.spill.sort.external_sort import parse_keys, sort_files
from penstock.exec.spill.sort.sort_progress import Progress

ROWS = 300_000


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(4)
    path = tmp_path_factory.mktemp("progress") / "in.parquet"
    pq.write_table(pa.table({"k": rng.integers(0, 10**9, ROWS), "v": rng.normal(size=ROWS)}), path,
                   row_group_size=50_000)
    return path


def numbers(line: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", line)]


def phase(lines: list[str], name: str) -> list[str]:
    return [line for line in lines if line.startswith(name + ":")]


def monotone(lines: list[str]) -> bool:
    """Every number of each line at least the same number of the line before (a phase's last
    line may add its totals after them)."""
    values = [numbers(line) for line in lines]
    return all(len(a) <= len(b) and all(x <= y for x, y in zip(a, b)) for a, b in zip(values, values[1:]))


def test_spilling_lines_grow_and_end_with_their_totals(tmp_path: Path, source: Path) -> None:
    lines: list[str] = []
    report = sort_files(source, parse_keys("k"), tmp_path / "o.parquet", memory_limit=1 << 20,
                        spill_dir=tmp_path / "spill", progress=Progress(lines.append, interval_s=0))
    assert report.spilled_bytes > 0 and len(lines) == len(set(lines)), lines
    assert [line.split(":")[0] for line in lines[:3]] == ["input", "sample", "partition"]
    reading = phase(lines, "partition")
    assert len(reading) > 3 and monotone(reading), reading
    spilled = f"{report.spilled_bytes / 2**20:,.1f} MiB spilled into {report.buckets:,} bucket files"
    assert reading[-1] == (f"partition: {ROWS:,} of {ROWS:,} rows read (100%), {report.chunks:,} chunks sorted, "
                           + spilled)
    merging = phase(lines, "merge")
    assert len(merging) > 3 and monotone(merging), merging
    assert merging[-1] == f"merge: {ROWS:,} of {ROWS:,} rows written (100%)" and lines[-1] == merging[-1]
    assert all("(100%)" not in line for line in merging[:-1])


def test_in_memory_lines(tmp_path: Path, source: Path) -> None:
    lines: list[str] = []
    report = sort_files(source, parse_keys("k"), tmp_path / "o.parquet", memory_limit=256 << 20,
                        spill_dir=tmp_path / "spill", progress=Progress(lines.append, interval_s=0))
    assert report.in_memory and len(lines) == len(set(lines))
    assert "sorted in memory" in lines[0]
    reading, writing = phase(lines, "read"), phase(lines, "write")
    assert monotone(reading) and reading[-1].startswith(f"read: {ROWS:,} of {ROWS:,} rows (100%)")
    assert "nothing spilled" in reading[-1]
    assert phase(lines, "sort") == [f"sort: {ROWS:,} rows in order"]
    assert monotone(writing) and writing[-1] == f"write: {ROWS:,} of {ROWS:,} rows (100%)" == lines[-1]
    assert summary(report, "o.parquet").endswith("in memory, nothing spilled")


def test_lines_are_rate_limited_but_final_ones_always_go_out() -> None:
    now = [0.0]
    lines: list[str] = []
    progress = Progress(lines.append, interval_s=1.0, clock=lambda: now[0])
    progress.line("merge: 1 of 9")
    progress.line("merge: 2 of 9")  # within the second: dropped
    now[0] = 1.5
    progress.line("merge: 3 of 9")
    progress.line("merge: 9 of 9", final=True)  # final: out at once
    progress.line("merge: 9 of 9", final=True)  # the same line again: never repeated
    assert lines == ["merge: 1 of 9", "merge: 3 of 9", "merge: 9 of 9"]
    Progress(None).line("nothing listens")


def test_a_terminal_gets_each_phase_rewritten_in_place() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        lines = ProgressLines(stream)
        for line in ["partition: 1 of 2 rows read", "partition: 2 of 2 rows read", "merge: 2 of 2 rows written"]:
            lines.say(line)
        lines.end()
    assert terminal.getvalue() == ("\rpartition: 1 of 2 rows read\x1b[K\rpartition: 2 of 2 rows read\x1b[K\n"
                                   "\rmerge: 2 of 2 rows written\x1b[K\n")
    assert log.getvalue() == "partition: 1 of 2 rows read\npartition: 2 of 2 rows read\nmerge: 2 of 2 rows written\n"
