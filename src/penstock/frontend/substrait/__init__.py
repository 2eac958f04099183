"""DataFusion's Substrait plan translated to penstock's IR: relations, expressions, types."""
