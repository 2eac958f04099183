"""Hash aggregation: its table and arenas, the pipeline mixin that runs it, and its partitioned runs past memory."""
