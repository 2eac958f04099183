"""`penstock serve`: penstock as a PostgreSQL server (protocol 3.0).

    protocol/   the wire: wire (framing), pgtypes (types, text/binary values), results and
                data_rows (rows out), extended (Parse/Bind/Describe/Execute), params ($n as
                literals), scram (SCRAM-SHA-256, users file)
    emulation/  system catalog emulation: pg_catalog (+ _tables, _types, _functions),
                information_schema
    rewrites/   PostgreSQL spellings for DataFusion: rewrite, rewrite_catalog,
                rewrite_empty, rewrite_subquery
    catalog     persistent tables (catalog.json)    statements  splitting, utility parsing
    settings    SET/SHOW/RESET parameters           admission   GPU memory shares
    database    shared engine + catalog             commands    one statement -> Outcome
    session     one connection's protocol loop      server      socket, TLS, auth, cancel
    cli         `penstock serve`, `penstock user add`
"""
