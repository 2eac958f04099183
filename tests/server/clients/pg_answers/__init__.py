"""The psql cases of test_postgresql_answers.py, one module per kind of difference."""

from server.clients.pg_answers import checks, errors, functions, literals, numbers, rows, types, windows

CASES: list[str] = [case for module in (rows, windows, numbers, checks, literals, types, functions, errors)
                    for case in module.CASES]
TYPED: list[str] = types.TYPED
