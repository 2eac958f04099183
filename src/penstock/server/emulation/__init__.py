"""PostgreSQL's system catalogs and information_schema, emulated as Arrow tables and UDFs."""
