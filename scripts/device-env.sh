# Source on the GPU machine (through the device tool): unpack the carried packages and set
# PATH, PYTHONPATH and the cache directory, so tests, the fuzzer and benchmarks can run.
#   source scripts/device-env.sh
# Carried folders (a call carries at most 64 MiB, so they are separate): .device-site (the
# Python packages), .device-nvcomp (nvCOMP's library, for Parquet decompression on the GPU),
# .device-tools (tpchgen-cli for `penstock gen tpch`, compute-sanitizer).
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/site "$OUT"
# .device-lite: the packages without KvikIO, plus tpchgen-cli, for a call that also carries
# nvCOMP and generates data (64 MiB do not hold all three otherwise); .device-litesite: the
# same packages alone (a call with nvCOMP that generates no TPC-H data); .device-pg: the
# PostgreSQL clients tests/server imports (carried beside .device-litesite); .device-noduck:
# the packages without DuckDB plus tpchgen-cli (beside nvCOMP: generate TPC-H and scan it);
# .device-faiss: faiss-cpu (beside .device-litesite: `penstock bench knn` with FAISS)
for site in .device-site .device-lite .device-litesite .device-noduck .device-pg .device-faiss; do
  if [ -f $site/site.tar.xz ]; then tar -xJf $site/site.tar.xz -C /tmp/site; fi
done
if [ -f .device-nvcomp/nvcomp.tar.xz ]; then
  tar -xJf .device-nvcomp/nvcomp.tar.xz -C /tmp/site
fi
for tools in .device-tools .device-lite .device-noduck; do  # penstock gen tpch's generator (pip's scripts are not in the site)
  if [ -f $tools/tpchgen-cli.xz ]; then
    mkdir -p /tmp/site/bin && xz -dc $tools/tpchgen-cli.xz > /tmp/site/bin/tpchgen-cli && chmod +x /tmp/site/bin/tpchgen-cli
  fi
done
if [ -f .device-tools/sanitizer.tar.xz ]; then
  mkdir -p /tmp/sanitizer && tar -xJf .device-tools/sanitizer.tar.xz -C /tmp/sanitizer
fi
export OUT PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD/src:$PWD/tests PYTHONUNBUFFERED=1
export PENSTOCK_CACHE_DIR=/tmp/penstock-cache
