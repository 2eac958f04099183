"""How constants are read as PostgreSQL reads them, before DataFusion plans: integers, untyped strings, bytea, Unicode escapes, dates, times and zones."""
