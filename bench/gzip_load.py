"""How much longer a `.json.gz` trace takes to load than the same trace uncompressed.

Loads ``FILE`` and ``FILE.gz`` (made with ``gzip -k -1`` when missing) in fresh processes,
alternating, ``--rounds`` times; with ``--zlib`` also the gzip file with the fast readers (ISA-L,
zlib-ng) switched off. Prints wall and CPU seconds per load (main process, and main + workers) and
the median gz / plain ratio over the rounds. Each load is ``stepscope.load(path, use_cache=False)``.

Usage: ``python bench/gzip_load.py [FILE] [--rounds 3] [--zlib]``
(FILE defaults to ``bench/data/kineto_1000mb.json``, made by ``python bench/make_traces.py --sizes 1000``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PROBE = """
import json, resource, sys, time
from stepscope import load  # the reader's imports, outside the timing
if sys.argv[2] == "zlib":
    from stepscope.ingest.readers import gzip_stream
    gzip_stream.FAST = None
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime
w0, (m0, c0) = time.perf_counter(), cpu()
load(sys.argv[1], use_cache=False)
w1, (m1, c1) = time.perf_counter(), cpu()
print(json.dumps({"wall_s": w1 - w0, "main_cpu_s": m1 - m0, "cpu_s": m1 - m0 + c1 - c0,
                  "load": float(open("/proc/loadavg").read().split()[0])}))
"""


def load_once(path: Path, mode: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(path), mode], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(BENCH.parent)})
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=str(BENCH / "data" / "kineto_1000mb.json"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--zlib", action="store_true", help="also load the gzip file with zlib only")
    args = ap.parse_args()
    plain, gz = Path(args.file), Path(args.file + ".gz")
    if not gz.exists():
        subprocess.run(["gzip", "-k", "-1", str(plain)], check=True)
    cases = [("plain", plain, "-"), ("gz", gz, "-")] + ([("gz zlib", gz, "zlib")] if args.zlib else [])
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in cases}
    for r in range(args.rounds):
        for name, path, mode in cases:
            res = load_once(path, mode)
            runs[name].append(res)
            print(f"round {r + 1} {name:8s} wall {res['wall_s']:6.2f} s  main cpu {res['main_cpu_s']:5.2f} s  "
                  f"all cpu {res['cpu_s']:5.2f} s  load {res['load']:.1f}", flush=True)
    for name, _, _ in cases[1:]:
        ratios = [g["wall_s"] / p["wall_s"] for g, p in zip(runs[name], runs["plain"])]
        each = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"{name} / plain: median {statistics.median(ratios):.2f}x (rounds {each})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
