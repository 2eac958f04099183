# Source on the GPU machine (through the device tool): unpack the carried packages and set
# PATH, PYTHONPATH and the cache directory, so tests, the fuzzer and benchmarks can run.
#   source scripts/device-env.sh
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/site "$OUT"
tar -xJf .device-site/site.tar.xz -C /tmp/site
if [ -f .device-site/tpchgen-cli.xz ]; then  # penstock gen tpch's generator (pip's scripts are not in the site)
  mkdir -p /tmp/site/bin && xz -dc .device-site/tpchgen-cli.xz > /tmp/site/bin/tpchgen-cli && chmod +x /tmp/site/bin/tpchgen-cli
fi
export OUT PATH=/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD/src:$PWD/tests PYTHONUNBUFFERED=1
export PENSTOCK_CACHE_DIR=/tmp/penstock-cache
