#!/usr/bin/env bash
# Build the folders the device tool carries to the GPU machine (a call carries at most
# 64 MiB, so they are separate and a call picks what it needs; see scripts/device-env.sh):
#   .device-litesite/site.tar.xz  Python packages the GPU machine lacks, without KvikIO
#   .device-lite/                 the same packages plus tpchgen-cli (penstock gen tpch)
#   .device-nvcomp/nvcomp.tar.xz  nvCOMP's shared library (Parquet pages decompressed on the GPU)
#   .device-pg/site.tar.xz        PostgreSQL clients for tests/server (psycopg, SQLAlchemy): beside
#                                 .device-litesite, not with nvCOMP (64 MiB)
#   .device-noduck/               the packages without DuckDB, plus tpchgen-cli: generates TPC-H
#                                 and scans it with nvCOMP in one call (scripts/scan_timeline.py)
#   .device-faiss/site.tar.xz     faiss-cpu, for `penstock bench knn` beside .device-litesite
#                                 (FAISS's IndexBinaryFlat in the same run; no nvCOMP needed)
# Shared objects are stripped and everything is compressed with xz -9 (the litesite harder). Run from the repo root.
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pip_target() {  # pip_target DIR PACKAGE... : manylinux cp312 wheels unpacked into DIR
  local dir=$1; shift
  python3 -m pip install -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --target "$dir" "$@"
  find "$dir" -name '*.so*' -type f -exec strip --strip-unneeded {} + 2>/dev/null || true
  find "$dir" -name '__pycache__' -type d -prune -exec rm -rf {} +
}
site=(
  "datafusion==55.0.0" "substrait==0.37.1" "substrait-protobuf==0.106.0" "substrait-extensions==0.106.0"
  "protobuf>=5,<8" "cloudpickle" "duckdb==2.0.0"
)
mkdir -p .device-litesite .device-lite .device-nvcomp .device-pg
pip_target "$tmp/site" "${site[@]}"
# the x86 filter and a 192 MiB dictionary: small enough that the litesite, nvCOMP and the
# working tree fit one call's 64 MiB
tar -cf - -C "$tmp/site" . | xz -T0 --x86 --lzma2=preset=9e,dict=192MiB > .device-litesite/site.tar.xz
cp .device-litesite/site.tar.xz .device-lite/site.tar.xz
pip_target "$tmp/tpchgen" "tpchgen-cli==4.0.0"
find "$tmp/tpchgen" -name tpchgen-cli -type f | head -1 | xargs -I{} sh -c 'strip {} 2>/dev/null; xz -9 -c {} > .device-lite/tpchgen-cli.xz'
mkdir -p .device-noduck
rm -rf "$tmp/site"/duckdb* "$tmp/site"/_duckdb*
tar -cf - -C "$tmp/site" . | xz -T0 -9 > .device-noduck/site.tar.xz
cp .device-lite/tpchgen-cli.xz .device-noduck/
pip_target "$tmp/nvcomp" "nvidia-libnvcomp-cu13>=5"
rm -rf "$tmp"/nvcomp/nvidia/libnvcomp/bin  # its command-line tools: penstock loads the library only
tar -cf - -C "$tmp/nvcomp" . | xz -T0 -9 > .device-nvcomp/nvcomp.tar.xz
pip_target "$tmp/faiss" "faiss-cpu==1.15.1" "packaging"
mkdir -p .device-faiss
tar -cf - -C "$tmp/faiss" . | xz -T0 -9 > .device-faiss/site.tar.xz
pip_target "$tmp/pg" "psycopg==3.3.9" "psycopg-binary==3.3.9" "SQLAlchemy==2.1.9" "typing_extensions" "greenlet"
tar -cf - -C "$tmp/pg" . | xz -T0 -9 > .device-pg/site.tar.xz
du -h .device-litesite/site.tar.xz .device-pg/site.tar.xz .device-faiss/site.tar.xz .device-lite/* .device-noduck/* .device-nvcomp/nvcomp.tar.xz
