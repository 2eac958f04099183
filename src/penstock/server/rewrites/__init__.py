"""PostgreSQL spellings and catalog queries rewritten before DataFusion plans them."""
