"""The `penstock` command's helpers (penstock/cli.py): result formatting (output.py),
`penstock sort` (sort_command.py), `penstock prebuild`'s warm-up (warm_up.py)."""
