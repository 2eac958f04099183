#!/usr/bin/env bash
# Run on the GPU machine (through the device tool): unpack the carried packages, generate the
# data if missing and run `penstock bench ssb|tpch`, reports into $OUT/bench.
#   scripts/gpu-bench.sh SUITE SF TIERS REPEAT [more bench args...]
#   e.g. scripts/gpu-bench.sh tpch 10 gpu 3 --format parquet
set -uo pipefail
source "$(dirname "$0")/device-env.sh"
SUITE=${1:-ssb}; SF=${2:-20}; TIERS=${3:-gpu,host,disk}; REPEAT=${4:-3}; shift 4 || true
export PENSTOCK_CACHE_DIR=${PENSTOCK_CACHE_DIR:-/tmp/penstock-cache-bench}
mkdir -p "$OUT/bench"
python3 -m penstock.cli bench "$SUITE" --sf "$SF" --data "/tmp/$SUITE-sf$SF" --tier "$TIERS" --repeat "$REPEAT" \
    --device gpu --out "$OUT/bench" "$@" 2>&1 | tee "$OUT/bench/log.txt" | grep -v '^\s*$' | tail -80
