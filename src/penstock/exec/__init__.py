"""Running physical plans: pipelines over batches, breakers between them."""
