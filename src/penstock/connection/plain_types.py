"""The plain Arrow types of a Connection's results: what DataFusion's engine answers (the
fallback, a statement's empty table) is given the types penstock's own kernels give."""

from __future__ import annotations

import pyarrow as pa


def plain_types(table: pa.Table) -> pa.Table:
    """DataFusion's view types as the plain Arrow types penstock's own results use, and its
    timestamps with time zone (nanoseconds, '+00:00', an AT TIME ZONE's zone) as penstock's
    timestamptz: microseconds in UTC, the same instants."""
    fields = []
    zoned = False
    for f in table.schema:
        t = f.type
        if pa.types.is_dictionary(t):  # a file's dictionary column, as DataFusion read it
            t = t.value_type
        if pa.types.is_string_view(t) or pa.types.is_large_string(t):
            t = pa.string()
        elif pa.types.is_binary_view(t):
            t = pa.binary()
        elif pa.types.is_timestamp(t) and t.tz is not None:
            zoned = zoned or t.unit == "ns"
            t = pa.timestamp("us", tz="UTC")
        fields.append(pa.field(f.name, t, f.nullable))
    schema = pa.schema(fields)
    # nanoseconds to microseconds drops digits PostgreSQL's timestamps do not hold
    return table if schema.equals(table.schema) else table.cast(schema, safe=not zoned)
