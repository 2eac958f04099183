#!/usr/bin/env bash
# Run on the GPU machine after scripts/gpu-suite.sh (which unpacks the packages): generate SSB
# data if missing and run `penstock bench ssb`, reports into $OUT/bench.
#   scripts/gpu-bench.sh SF TIERS REPEAT [more bench args...]
set -uo pipefail
OUT=${OUT:-/tmp/out}
SF=${1:-20}; TIERS=${2:-gpu,host,disk}; REPEAT=${3:-3}; shift 3 || true
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
export PENSTOCK_CACHE_DIR=${PENSTOCK_CACHE_DIR:-/tmp/penstock-cache-bench}
mkdir -p "$OUT/bench"
python3 -m penstock.cli bench ssb --sf "$SF" --data "/tmp/ssb-sf$SF" --tier "$TIERS" --repeat "$REPEAT" \
    --device gpu --out "$OUT/bench" "$@" 2>&1 | tee "$OUT/bench/log.txt" | grep -v '^\s*$' | tail -80
