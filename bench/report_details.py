"""What the standalone report's timeline event details cost: time and bytes.

Usage: ``python bench/report_details.py [TRACE] [--repeat 3]`` (default ``bench/data/kineto_1000mb.json``).
Set ``STEPSCOPE_CACHE_DIR`` to reuse a cache (the load is not timed).

For each rank the report carries a timeline of: the timeline snapshot (windows + details) as
``report`` builds it, then ``details_table`` over the carried events alone and its embedding
(``embed_json``), best of ``--repeat``; the embedded bytes of the windows and of the details. One
JSON line per rank, then the totals.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import stepscope
from stepscope.analysis.timeline_details import details_table
from stepscope.server.results import rank_info
from stepscope.server.standalone import SNAPSHOT_RANKS, embed_json, timeline_snapshot


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=str(Path(__file__).parent / "data" / "kineto_1000mb.json"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    trace = stepscope.load(args.trace)
    totals = {"details_s": 0.0, "embed_s": 0.0, "windows_bytes": 0, "details_bytes": 0, "rows": 0}
    for rank in trace.rank_ids[:SNAPSHOT_RANKS]:
        info = rank_info(trace, rank)
        t0 = time.perf_counter()
        snap = timeline_snapshot(trace, info)
        snapshot_s = time.perf_counter() - t0
        rows = np.concatenate([np.asarray(w["events"]["row"]) for w in snap["windows"] if w["events"]] or [[]])
        det_s = best(partial(details_table, trace, rank, rows), args.repeat)
        table = details_table(trace, rank, rows)
        emb_s = best(partial(embed_json, table), args.repeat)
        out = {"rank": rank, "rows": len(np.unique(rows)), "snapshot_s": round(snapshot_s, 3),
               "details_s": round(det_s, 3), "embed_details_s": round(emb_s, 3),
               "windows_bytes": len(embed_json(snap["windows"])), "details_bytes": len(embed_json(table))}
        print(json.dumps(out))
        totals["details_s"] += det_s
        totals["embed_s"] += emb_s
        totals["windows_bytes"] += out["windows_bytes"]
        totals["details_bytes"] += out["details_bytes"]
        totals["rows"] += out["rows"]
    print(json.dumps({"total": {k: round(v, 3) if isinstance(v, float) else v for k, v in totals.items()}}))


if __name__ == "__main__":
    main()
