"""PostgreSQL's result types where DataFusion types a result otherwise, on both engines."""
