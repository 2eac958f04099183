"""The PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java) against penstock, through a
small Java program (jdbc/CatalogCheck.java, compiled here): DatabaseMetaData.getTables and
getColumns, and a PreparedStatement with int, string and date parameters, run past the
driver's prepareThreshold so that it also uses named server-side statements."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from server.conftest import Running

JAR = Path("/usr/share/java/postgresql.jar")
SOURCE = Path(__file__).parent / "jdbc" / "CatalogCheck.java"


@pytest.fixture(scope="module")
def jdbc_output(pg_server: Running, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        pytest.fail("javac/java are not installed: these tests need a JDK (Debian: default-jdk-headless)")
    if not JAR.exists():
        pytest.fail(f"{JAR} is missing: these tests need the JDBC driver (Debian: libpostgresql-jdbc-java)")
    classes = tmp_path_factory.mktemp("jdbc")
    subprocess.run([javac, "-d", str(classes), str(SOURCE)], check=True, timeout=120)
    done = subprocess.run([java, "-Duser.timezone=UTC", "-cp", f"{JAR}:{classes}", "CatalogCheck",
                           f"jdbc:postgresql://127.0.0.1:{pg_server.port}/penstock", "tester"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_connects_to_a_postgresql_15(jdbc_output: list[str]) -> None:
    assert "PRODUCT PostgreSQL 15" in jdbc_output


def test_get_tables(jdbc_output: list[str]) -> None:
    assert [line for line in jdbc_output if line.startswith("TABLE ")] == ["TABLE public sample TABLE"]


def test_get_columns_names_and_sql_types(jdbc_output: list[str]) -> None:
    # java.sql.Types: INTEGER 4, BIGINT -5, VARCHAR 12, DOUBLE 8, NUMERIC 2, DATE 91, TIMESTAMP 93, BIT -7
    assert [line for line in jdbc_output if line.startswith("COLUMN ")] == [
        "COLUMN id 4 int4 1 YES", "COLUMN big -5 int8 2 YES", "COLUMN name 12 text 3 YES",
        "COLUMN score 8 float8 4 YES", "COLUMN amount 2 numeric 5 YES", "COLUMN day 91 date 6 YES",
        "COLUMN ts 93 timestamp 7 YES", "COLUMN flag -7 bool 8 YES"]


def test_prepared_statement_with_int_string_and_date_parameters(jdbc_output: list[str]) -> None:
    # id >= 1 AND name <> 'beta' AND day < 2010-01-01: alpha is 2024, beta excluded, row 3 has NULLs
    assert [line for line in jdbc_output if line.startswith("ROW ")] == ["ROW 4 it's 2000-02-29"]
