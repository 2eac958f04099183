"""Running one pipeline: its source read into batches (and skipped by statistics), its
kernel's parameters bound, its sink's outputs, and the ways one pipeline runs as several."""
