"""Errors penstock raises, with PostgreSQL SQLSTATE codes.

Every layer may raise these, so they live at the bottom of the package and import nothing.
"""

from __future__ import annotations


class PenstockError(Exception):
    """Base class of everything penstock raises on purpose."""


class QueryError(PenstockError):
    """A query could not run: bad SQL, unknown name, bad data, overflow, division by zero.

    `sqlstate` is PostgreSQL's five-character code; `position` is the 1-based character
    offset into the SQL text where the problem is, when known (PostgreSQL's convention);
    `hint` is PostgreSQL's HINT line, where it gives one.
    """

    def __init__(self, message: str, sqlstate: str = "XX000", position: int | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.position = position
        self.hint = hint

    def __str__(self) -> str:
        where = f" (at position {self.position})" if self.position else ""
        return f"{self.message}{where} [SQLSTATE {self.sqlstate}]"


class Unsupported(PenstockError):
    """penstock's own executor cannot run this query (or this part of it).

    Raised while planning or generating code; the API catches it and runs the whole query
    on DataFusion's CPU engine instead, unless the connection is strict.
    """

    sqlstate = "0A000"  # feature_not_supported


class FileError(QueryError):
    """A data file is missing, unreadable or corrupt. The message names the file."""

    def __init__(self, message: str, path: str, sqlstate: str = "58030"):
        super().__init__(message, sqlstate)
        self.path = path


# SQLSTATE codes used across the code base, named as in PostgreSQL's errcodes.txt.
SYNTAX_ERROR = "42601"
UNDEFINED_TABLE = "42P01"
UNDEFINED_COLUMN = "42703"
UNDEFINED_FUNCTION = "42883"
AMBIGUOUS_COLUMN = "42702"
INVALID_RECURSION = "42P19"
DATATYPE_MISMATCH = "42804"
STRING_DATA_LENGTH_MISMATCH = "22026"
DUPLICATE_TABLE = "42P07"
NUMERIC_VALUE_OUT_OF_RANGE = "22003"
DATA_CORRUPTED = "XX001"
DIVISION_BY_ZERO = "22012"
INVALID_TEXT_REPRESENTATION = "22P02"
INVALID_DATETIME_FORMAT = "22007"
DATETIME_FIELD_OVERFLOW = "22008"
STRING_DATA_RIGHT_TRUNCATION = "22001"
INVALID_PARAMETER_VALUE = "22023"
CARDINALITY_VIOLATION = "21000"
INVALID_ESCAPE_SEQUENCE = "22025"
OUT_OF_MEMORY = "53200"
QUERY_CANCELED = "57014"
PROGRAM_LIMIT_EXCEEDED = "54000"
IO_ERROR = "58030"
INTERNAL_ERROR = "XX000"
FEATURE_NOT_SUPPORTED = "0A000"
UNDEFINED_FILE = "58P01"
