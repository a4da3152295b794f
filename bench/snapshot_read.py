"""Time and peak RSS of ``stepscope memory`` on a synthetic allocator snapshot, one command::

    python bench/snapshot_read.py --mb 100            # writes /tmp/stepscope_snap_100.pickle once, then measures
    python bench/snapshot_read.py --mb 1220           # ~1 GB on disk (the issue's bar: < 30 s, < 3 GiB RSS)

Each measurement runs in a fresh process (``read_snapshot`` + ``summarize``, as the CLI) and reports
the wall and CPU time of each phase (CPU time: what a loaded machine does not inflate) and the
process's peak RSS (``ru_maxrss``). ``--reader stream|whole`` forces the streaming reader or the
restricted C unpickler (default: as ``stepscope memory``, streamed above 64 MiB). The snapshot is the shape
``bench/make_snapshot.py`` writes (a frame dict per frame of each entry).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from stepscope.ingest.snapshot import read_snapshot
from stepscope.analysis.allocator import summarize
t1, c1 = time.perf_counter(), time.process_time()
snap = read_snapshot(sys.argv[1], stream=None if sys.argv[2] == "auto" else sys.argv[2] == "stream")
t2, c2 = time.perf_counter(), time.process_time()
s = summarize(snap)
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({"read_s": t2 - t1, "read_cpu_s": c2 - c1, "summary_s": t3 - t2, "summary_cpu_s": c3 - c2,
                  "entries": int(len(snap.trace["addr"])),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "peak_live_bytes": s.history[0].peak_live_bytes if s.history else 0}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=100, help="target size passed to make_snapshot.py (MiB of entries)")
    ap.add_argument("--path", default=None, help="snapshot to use (written when absent)")
    ap.add_argument("--reader", choices=("auto", "stream", "whole"), default="auto",
                    help="auto: streamed above 64 MiB (as stepscope memory); stream / whole: force one reader")
    a = ap.parse_args()
    path = Path(a.path or f"/tmp/stepscope_snap_{a.mb}.pickle")
    if not path.exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, str(Path(__file__).with_name("make_snapshot.py")), str(path), "--mb",
                        str(a.mb)], check=True)
        print(f"wrote {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    t = time.perf_counter()
    # cwd: ``python -c`` puts the current directory first on sys.path: run in this checkout, not the caller's
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path.resolve()), a.reader], check=True,
                         capture_output=True, text=True, env=env, cwd=root)
    res = json.loads(out.stdout)
    res.update(file_mb=round(path.stat().st_size / 1e6, 1), wall_s=round(time.perf_counter() - t, 2))
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in res.items()}))


if __name__ == "__main__":
    main()
