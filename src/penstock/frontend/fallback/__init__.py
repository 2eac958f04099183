"""The plan DataFusion runs when the kernels cannot: what it would answer otherwise than PostgreSQL, and that written out of it."""
