"""SQL -> DataFusion -> Substrait -> penstock IR."""
