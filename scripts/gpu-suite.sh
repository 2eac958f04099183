#!/usr/bin/env bash
# Run on the GPU machine (through the device tool): unpack the carried packages, check the
# environment, run `pytest -m gpu`, and optionally a benchmark. Logs go to $OUT.
#   scripts/gpu-suite.sh [pytest args...]      e.g. scripts/gpu-suite.sh -x tests/differential
set -uo pipefail
source "$(dirname "$0")/device-env.sh"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import cupy, pyarrow, datafusion, duckdb, numpy; print('cupy', cupy.__version__, 'pyarrow', pyarrow.__version__, 'datafusion', datafusion.__version__, 'duckdb', duckdb.__version__)"
  python3 -c "from cuda.bindings import nvrtc; print('nvrtc', nvrtc.nvrtcVersion())"
  which g++ && g++ --version | head -1
  nproc; free -g | head -2
} 2>&1 | tee "$OUT/env.txt"
python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 "$@" 2>&1 | tee "$OUT/pytest-gpu.txt" | tail -60
