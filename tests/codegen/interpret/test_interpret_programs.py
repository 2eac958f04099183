"""Interpreter programs (codegen/interpret/): their encoding agrees with kernels/interpret.h,
and a kernel gets a program exactly when the interpreter covers all of it."""

from __future__ import annotations

from pathlib import Path

import re

import numpy as np
import pyarrow as pa
import pytest

from penstock.codegen.interpret.program import INS_WORDS, Header, NotInterpretable, Op, Program
from penstock.codegen.kernel import ParamTable, RowCount
from penstock.device.kernel_spec import header_sources


def header_enum(name: str) -> list[str]:
    text = header_sources()["interpret_steps.h"] + header_sources()["interpret.h"]
    body = re.search(r"enum " + name + r" \{(.*?)\};", text, re.S)
    assert body is not None, name
    return [re.sub(r"\s*=.*", "", item.strip()) for item in body.group(1).split(",") if item.strip()]


def test_ops_and_header_words_are_numbered_as_the_interpreter_numbers_them() -> None:
    assert header_enum("Op") == [f"OP_{op.name}" for op in Op]
    assert header_enum("Header") == [f"H_{word.name}" for word in Header]
    assert f"INS_WORDS = {INS_WORDS}" in header_sources()["interpret_steps.h"]


def test_a_program_names_only_parameters_the_kernel_has() -> None:
    params = ParamTable()
    params.get(RowCount(), "int64_t", "i64", "n")
    program = Program(params)
    assert program.arg(RowCount()) == 0
    with pytest.raises(NotInterpretable):
        program.arg(RowCount.__mro__[1]())  # a role the kernel has no parameter for


def test_encoding_lays_out_header_tables_and_code() -> None:
    program = Program(ParamTable())
    key, value = program.reg(), program.reg()
    program.keys = [(0, 2, key.index)]
    program.measures = [(1, 4, 0, value.index)]
    program.emit(Op.LOAD, key, x=0, y=-1, z=3)
    program.emit(Op.LOAD, value, x=1, y=-1, z=3)
    program.emit(Op.AGG_GROUP, x=-1)
    program.emit(Op.COUNT, x=0)
    words = np.frombuffer(program.encode(), dtype=np.int32)
    code = words[words[Header.CODE]:words[Header.CODE_END]].reshape(-1, INS_WORDS)
    assert [int(c[0]) for c in code] == [Op.LOAD, Op.LOAD, Op.AGG_GROUP, Op.COUNT, Op.END]  # an END closes it
    assert words[Header.KEYS] == 1 and list(words[words[Header.KEY_TABLE]:][:3]) == [0, 2, code[0][1]]
    assert list(words[words[Header.MEASURE_TABLE]:][:4]) == [1, 4, 0, code[1][1]]
    assert code[0][1] != code[1][1]  # both live at the aggregate: two registers


def interpreted_kernels(db: object, sql: str) -> int:
    text = db.explain(sql, analyze=True)  # type: ignore[attr-defined]
    found = re.search(r"(\d+) run by the plan interpreter", text)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize("sql, kernels", [
    ("SELECT g, sum(v), count(*) FROM t WHERE v > 3 GROUP BY g", 2),  # the pipeline and its finaliser
    ("SELECT sum(v * 2), avg(f) FROM t WHERE d < date '2000-01-01' + interval '1' month", 2),
    ("SELECT v, f FROM t WHERE v % 3 = 1", 1),
    ("SELECT s, count(*) FROM t GROUP BY s", 2),  # text keys, kept in the arena
    ("SELECT count(*) FROM t WHERE s = 'a'", 2),  # text compared with a literal
    ("SELECT count(*) FROM t WHERE s LIKE 'a%'", 2),
    ("SELECT sum(CASE WHEN s IN ('a', 'b') THEN v ELSE 0 END) FROM t", 2),
    ("SELECT g, count(*) FROM t GROUP BY g ORDER BY g DESC", 3),  # and the small sort of the result
    ("SELECT count(*) FROM t WHERE v < CAST(1 + 10 AS numeric(22, 2)) AND v > -2 * 3", 2),  # folded literals
    ("SELECT min(s) FROM t", 0),  # text states: compiled
    ("SELECT d - date '2000-01-01', d + interval '1 month 2 hours', d + 1 FROM t", 1),  # integer, timestamp, date
])
def test_which_kernels_the_interpreter_runs(sql: str, kernels: int, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    import penstock

    monkeypatch.setenv("PENSTOCK_INTERPRET", "always")
    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))  # no kernel another run compiled
    db = penstock.connect(device="cpu")
    monkeypatch.setattr(db.backend, "_kernels", {})  # every kernel asked for anew
    db.register_arrow("t", pa.table({"g": [1, 2, 1, None], "v": [1, 5, 7, 4], "f": [0.5, 1.5, None, 2.0],
                                     "d": pa.array([10000, 11000, 12000, 9000], pa.int32()).cast(pa.date32()),
                                     "s": ["a", "b", None, "a"]}))
    assert interpreted_kernels(db, sql) == kernels


def test_instructions_no_row_changes_move_to_the_prologue_and_jumps_follow() -> None:
    """Program.hoisted: a constant and a comparison of constants run once per thread; an
    instruction written twice, or reading a row's value, stays; jumps are renumbered to the
    instructions kept."""
    program = Program(ParamTable())
    c1, c2, row, same, twice = (program.reg() for _ in range(5))
    program.emit(Op.CONST, c1, x=0)
    program.emit(Op.LOAD, row, x=0, y=-1, z=3)
    program.emit(Op.CONST, c2, x=1)
    program.emit(Op.CMP, same, c1, c2)  # constants only: hoisted
    program.emit(Op.SET, twice, x=0)  # written twice: kept
    program.emit(Op.FILTER, a=row, x=6)  # jumps to the SET below
    program.emit(Op.SET, twice, x=1)
    prologue, body = program.hoisted()
    assert [Op(i[0]) for i in prologue] == [Op.CONST, Op.CONST, Op.CMP]
    assert [Op(i[0]) for i in body] == [Op.LOAD, Op.SET, Op.FILTER, Op.SET]
    assert body[2][4] == 3  # the FILTER's target, renumbered


def test_literal_arithmetic_is_folded_and_a_date_literal_parsed_once() -> None:
    from penstock.codegen.interpret.folding import fold, plain_date
    from penstock.plan.expr import Call, Cast, Literal
    from penstock.plan.types import INT8, INT64, decimal

    assert fold(Cast(decimal(22, 2), Call(INT64, "add", (Literal(INT64, 1), Literal(INT64, 10))))) == \
        Literal(decimal(22, 2), 1100)
    overflow = Call(INT8, "mul", (Literal(INT8, 100), Literal(INT8, 2)))
    assert fold(overflow) is overflow  # 200 does not fit: computed per row, where it raises 22003
    assert plain_date("1994-01-01") and not plain_date("1994-02-30") and not plain_date("yesterday")


def test_date_arithmetic_interpreted_answers_and_raises_as_compiled(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    """date - date (integer) and date + interval (a timestamp: the months added to the date,
    then its microseconds and the interval's, checked) give the compiled kernel's values, and
    its 22003 past the range of a timestamp."""
    import penstock
    from penstock.errors import PenstockError

    monkeypatch.setenv("PENSTOCK_CACHE_DIR", str(tmp_path))
    days = pa.array([18292, None, -1, 10957], pa.int32()).cast(pa.date32())
    sql = ("SELECT d - date '2000-01-01', d + interval '1 month', d - interval '1 year 2 hours', "
           "interval '36 hours' + d FROM t")
    answers = []
    for setting in ("always", "0"):
        monkeypatch.setenv("PENSTOCK_INTERPRET", setting)
        db = penstock.connect(device="cpu", strict=True)
        monkeypatch.setattr(db.backend, "_kernels", {})
        db.register_arrow("t", pa.table({"d": days}))
        assert (interpreted_kernels(db, sql) == 1) == (setting == "always")
        answers.append(db.sql(sql).to_arrow().columns)
        db.register_arrow("far", pa.table({"d": pa.array([2**31 - 1], pa.int32()).cast(pa.date32())}))
        with pytest.raises(PenstockError) as raised:
            db.sql("SELECT d + interval '1 hour' FROM far").to_arrow()
        assert raised.value.sqlstate == "22003"
    assert answers[0] == answers[1]
    assert answers[0][0].to_pylist() == [7335, None, -10958, 0]
