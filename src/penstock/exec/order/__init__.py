"""ORDER BY: the sort step (in memory, out of core, top-k) and the small sorts done on the device."""
