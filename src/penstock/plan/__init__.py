"""IR types, expressions, relations, and physical planning into pipelines."""
