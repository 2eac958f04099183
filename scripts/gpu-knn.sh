#!/usr/bin/env bash
# Run on the GPU machine (through the device tool, carrying .device-litesite and .device-faiss):
# the k-NN tests under `pytest -m gpu` (with the top-k statement's Hamming pass and the
# streamed scan's pass-through, which the search's scan takes), then `penstock bench knn`
# with FAISS and DuckDB beside penstock (a top-k statement a query, and knn_hamming: the one
# pass) and the regimes besides the column cache (first run, Arrow and Parquet files in the
# page cache and on the drive), then knn_timeline.py. Logs to $OUT.
#   scripts/gpu-knn.sh [ROWS] [BITS]      (default: 20000000 2048, the issue's size)
set -uo pipefail
source "$(dirname "$0")/device-env.sh"
ROWS=${1:-20000000}; BITS=${2:-2048}
timeout "${TEST_SECONDS:-120}" python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 -rfE \
    tests/exec/order/test_knn_gpu_batch.py tests/exec/order/test_knn_batch.py tests/exec/order/test_top_k_hamming.py \
    tests/exec/pipeline/test_pass_through.py tests/test_connection_stream.py > "$OUT/pytest-knn.txt" 2>&1
echo "pytest exit: $?"; tail -15 "$OUT/pytest-knn.txt"
mkdir -p "$OUT/knn"
timeout "${BENCH_SECONDS:-380}" python3 -m penstock.cli bench knn --rows "$ROWS" --bits "$BITS" --k 10 --batch 1,16,256 \
    --device gpu --regimes --repeat 2 --dir /tmp/bench-knn --out "$OUT/knn" 2>&1 | tee "$OUT/knn/log.txt" | tail -30
# where one search's time goes (kernels, copies and the host's gaps), for one query and a batch
PYTHONPATH=$PYTHONPATH:$PWD/scripts timeout "${TIMELINE_SECONDS:-75}" python3 scripts/knn_timeline.py --batch 1,16 \
    > "$OUT/knn/timeline.txt" 2>&1
grep -A4 "^==" "$OUT/knn/timeline.txt"
