#!/usr/bin/env bash
# Run on the GPU machine (through the device tool): unpack the carried packages, check the
# environment, run `pytest -m gpu`, and optionally a benchmark. Logs go to $OUT.
#   scripts/gpu-suite.sh [pytest args...]      e.g. scripts/gpu-suite.sh -x tests/differential
# SUITE_SECONDS (default 540) bounds pytest, so that the summary still prints when the device
# call's limit comes first; -v logs every test's outcome as it ends, so failures are named
# even in a run cut short. The TPC-H tests (tests/differential/test_tpch.py,
# tests/device/test_tiers.py) need tpchgen-cli, which does not fit beside .device-litesite and
# .device-nvcomp: run them in a call carrying .device-litesite and .device-noduck/tpchgen-cli.xz.
# The PostgreSQL oracles (tests/differential/test_postgresql.py, tests/fuzz/test_fuzz_postgres.py)
# need a PostgreSQL server, which the GPU machine lacks: --ignore them there.
set -uo pipefail
source "$(dirname "$0")/device-env.sh"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import cupy, pyarrow, datafusion, duckdb, numpy; print('cupy', cupy.__version__, 'pyarrow', pyarrow.__version__, 'datafusion', datafusion.__version__, 'duckdb', duckdb.__version__)"
  python3 -c "from cuda.bindings import nvrtc; print('nvrtc', nvrtc.nvrtcVersion())"
  which g++ && g++ --version | head -1
  nproc; free -g | head -2
} 2>&1 | tee "$OUT/env.txt"
# eight workers with tiered builds: two background compiles each, not half the cores each
PENSTOCK_UPGRADE_WORKERS=${PENSTOCK_UPGRADE_WORKERS:-2} PENSTOCK_LEAK_LOG="$OUT/device-memory-left.txt" PENSTOCK_OOM_DUMP="$OUT/oom-dump.txt" timeout "${SUITE_SECONDS:-540}" python3 -m pytest -m gpu -v -rfEX -p no:cacheprovider -n 8 "$@" \
  > "$OUT/pytest-gpu.txt" 2>&1
echo "pytest exit: $?"
grep -E "FAILED|ERROR|XPASS|XFAIL| passed| failed" "$OUT/pytest-gpu.txt" | grep -v " PASSED " | tail -60
