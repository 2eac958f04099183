"""Hash joins: the build step, the tables, builds kept in cached tables, and partitioned joins past memory."""
