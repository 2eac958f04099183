"""The psql cases of test_postgresql_answers.py, one module per kind of difference."""

from server.clients.pg_answers import checks, errors, functions, literals, numbers, rows, types, windows, zones

CASES: list[str] = [case for module in (rows, windows, numbers, checks, literals, types, functions, errors, zones)
                    for case in module.CASES]
TYPED: list[str] = types.TYPED + zones.TYPED
