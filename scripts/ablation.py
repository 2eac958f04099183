"""Kernel time of variants of an SSB query on GPU-cached data: which part costs what.

usage: python scripts/ablation.py DATA_DIR
"""

from __future__ import annotations

import sys

import penstock
from penstock.datagen import register_ssb

VARIANTS = {
    "scan sum": "SELECT sum(lo_revenue) FROM lineorder",
    "filter count": "SELECT count(*) FROM lineorder WHERE lo_partkey < 40000",
    "1 probe count": "SELECT count(*) FROM lineorder, part WHERE lo_partkey = p_partkey AND p_category = 'MFGR#12'",
    "2 probes sum": "SELECT sum(lo_revenue) FROM lineorder, part, supplier WHERE lo_partkey = p_partkey "
                    "AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' AND s_region = 'AMERICA'",
    "3 probes sum": "SELECT sum(lo_revenue) FROM lineorder, date, part, supplier WHERE lo_orderdate = d_datekey "
                    "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' "
                    "AND s_region = 'AMERICA'",
    "group int": "SELECT d_year, sum(lo_revenue) FROM lineorder, date, part, supplier WHERE lo_orderdate = d_datekey "
                 "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' "
                 "AND s_region = 'AMERICA' GROUP BY d_year",
    "group text": "SELECT p_brand1, sum(lo_revenue) FROM lineorder, date, part, supplier WHERE lo_orderdate = d_datekey "
                  "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' "
                  "AND s_region = 'AMERICA' GROUP BY p_brand1",
    "group int count": "SELECT d_year, count(*) FROM lineorder, date, part, supplier WHERE lo_orderdate = d_datekey "
                       "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' "
                       "AND s_region = 'AMERICA' GROUP BY d_year",
    "group lo col": "SELECT lo_orderdate / 10000, sum(lo_revenue) FROM lineorder, part, supplier WHERE "
                    "lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' "
                    "AND s_region = 'AMERICA' GROUP BY lo_orderdate / 10000",
    "group 0 probes": "SELECT lo_orderdate / 10000, sum(lo_revenue) FROM lineorder WHERE lo_partkey < 40000 "
                      "GROUP BY lo_orderdate / 10000",
    "group 1 probe": "SELECT lo_orderdate / 10000, sum(lo_revenue) FROM lineorder, part WHERE "
                     "lo_partkey = p_partkey AND p_category = 'MFGR#12' GROUP BY lo_orderdate / 10000",
    "Q2.1": "SELECT sum(lo_revenue), d_year, p_brand1 FROM lineorder, date, part, supplier WHERE lo_orderdate = d_datekey "
            "AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey AND p_category = 'MFGR#12' "
            "AND s_region = 'AMERICA' GROUP BY d_year, p_brand1",
}


def main(data: str, only: list[str] | None = None) -> None:
    db = penstock.connect(device="gpu", strict=True)
    register_ssb(db, data, "arrow")
    db.cache("lineorder", ["lo_revenue", "lo_partkey", "lo_suppkey", "lo_orderdate"])
    for t in ("supplier", "part", "date"):
        db.cache(t)
    for name, sql in VARIANTS.items():
        if only and name not in only:
            continue
        db.sql(sql)
        best = min((db.sql(sql) for _ in range(3)), key=lambda r: r.seconds)
        main_kernel = max(p.kernel_seconds for p in best.metrics.pipelines.values())
        print(f"{name:14} total {best.seconds * 1000:7.2f} ms  biggest kernel {main_kernel * 1000:7.2f} ms", flush=True)
        if "-v" in sys.argv:
            print(db.explain(sql, analyze=True))


if __name__ == "__main__":
    main(sys.argv[1], [a for a in sys.argv[2:] if a != "-v"] or None)
