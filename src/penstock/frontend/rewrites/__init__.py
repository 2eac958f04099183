"""Statements rewritten on their text before DataFusion plans them, so that its plan answers as PostgreSQL would: casts, windows, joins, set operations, set-returning functions, clocks."""
