"""The web server's memory on a many-rank run: the whole model against the map-reduce path.

``python bench/serve_memory.py RUN_DIR`` or ``python bench/serve_memory.py --ranks N [--mb-per-rank M]``
(the run made by ``bench/cluster_scale.py``'s generator: N rank files from a real DLRM rank).

For each path (``whole``: ``RunStore(map_reduce=False)``, the server before; ``map-reduce``: the
default now) a fresh process with a fresh cache opens the run the way ``stepscope serve`` does
(``RunStore.get``: analysis, advice, document) and answers the first view the web UI asks for —
the document, ``info``, rank 0's memory curves and rank 0's whole-extent timeline window (which
loads rank 0's model on the map-reduce path). Reported per path: wall time of each step, the server
process's peak RSS (``VmHWM``) after opening and after the first view, its RSS after the first view
(what it keeps), and the largest map worker's peak (``RUSAGE_CHILDREN``). Every answer is checked
equal between the two paths (timeline windows up to the numbering of tracks and rows).
One JSON line per path is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20


def _status(key: str) -> float:
    with open("/proc/self/status") as fh:
        kb = next(int(line.split()[1]) for line in fh if line.startswith(key))
    return round(kb / 1024, 1)


def child(run: Path, map_reduce: bool) -> None:
    """One server process: open the run, answer the first view, print the numbers."""
    from stepscope.server.discover import discover_runs
    from stepscope.server.store import RunStore

    # served from its parent, where the directory is one run (its loose files would be a run each)
    store = RunStore(discover_runs(run.parent), map_reduce=map_reduce)
    (entry,) = [e for e in store.entries if e.path.resolve() == run.resolve()]
    t0 = time.perf_counter()
    res = store.get(entry.id)
    t1 = time.perf_counter()
    opened_hwm, opened_rss = _status("VmHWM"), _status("VmRSS")
    rank = res.ranks[0]
    first, last = res.extents[rank]
    answers = [res.doc, res.info, res.memory[rank], store.window(entry.id, rank, first, last, 4000)]
    t2 = time.perf_counter()
    window = json.loads(answers[3])
    print(json.dumps({
        "path": "map-reduce" if map_reduce else "whole", "ranks": len(res.ranks), "events": res.summary["events"],
        "open_s": round(t1 - t0, 2), "first_view_s": round(t2 - t1, 2),
        "peak_after_open_mib": opened_hwm, "rss_after_open_mib": opened_rss,
        "peak_after_first_view_mib": _status("VmHWM"), "rss_after_first_view_mib": _status("VmRSS"),
        "largest_worker_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
        "digest": hashlib.sha256(b"".join(answers[:3])).hexdigest()[:16],
        "window": [window["mode"], window["event_count"], len(window["tracks"])]}))


def measure(run: Path, map_reduce: bool) -> dict[str, Any]:
    cache = tempfile.mkdtemp(prefix="stepscope-serve-bench-")
    env = {**os.environ, "STEPSCOPE_CACHE_DIR": cache, "PYTHONPATH": str(REPO)}
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", str(run), "--map-reduce", str(int(map_reduce))],
                              env=env, capture_output=True, text=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"the server process failed: {proc.stderr[-3000:]}")
    out = proc.stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("run", nargs="?", type=Path, help="a run directory of several rank files")
    ap.add_argument("--ranks", type=int, help="make N ranks with bench/cluster_scale.py's generator instead")
    ap.add_argument("--mb-per-rank", type=float, default=0.73)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--map-reduce", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        child(args.child, bool(args.map_reduce))
        return 0
    run = args.run
    if run is None:
        sys.path.insert(0, str(REPO / "bench"))
        from cluster_scale import make_run

        run = make_run(args.ranks, args.mb_per_rank)
    rows = [measure(run, False), measure(run, True)]
    for r in rows:
        print(json.dumps({"run": str(run), **r}))
    if rows[0]["digest"] != rows[1]["digest"] or rows[0]["window"] != rows[1]["window"]:
        print("the two paths answered differently", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
