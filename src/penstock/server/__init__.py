"""`penstock serve`: penstock as a PostgreSQL server (protocol 3.0).

    wire        message framing            pgtypes   PostgreSQL types, text/binary values
    scram       SCRAM-SHA-256, users file  catalog   persistent tables (catalog.json)
    statements  splitting, utility parsing rewrite   PostgreSQL-only syntax for DataFusion
    params      $n as literals             settings  SET/SHOW/RESET parameters
    pg_catalog  system catalog emulation   admission GPU memory shares for concurrent queries
    database    shared engine + catalog    commands  one statement -> Outcome
    extended    Parse/Bind/Describe/...    session   one connection's protocol loop
    server      socket, TLS, auth, cancel  cli       `penstock serve`, `penstock user add`
"""
