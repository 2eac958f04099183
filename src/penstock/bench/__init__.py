"""`penstock bench`: performance, always beside DuckDB and the hardware ceiling measured in
the same run. Benchmarks report; tests never assert on time."""
