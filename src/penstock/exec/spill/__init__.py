"""Work that does not fit its memory budget: spill directories and the out-of-core sort."""
