"""The event-dense trace bar (issue 21): 5 M small events, analysed cold, reopened from the cache.

One command:  python bench/dense_trace.py [--events 5000000] [--repeat 1] [--code CHECKOUT] [--json OUT]
(``--code``: the stepscope sources to time, default this checkout; e.g. ``git archive main`` unpacked).

The trace is ``bench/data/kineto_dense_<N>.json``, made by ``bench/make_traces.py --dense N`` when
missing (short ``cpu_op`` → ``cudaLaunchKernel`` → kernel triples linked by correlation, 4
ProfilerSteps). Each measurement is a fresh process, one at a time:

* **cold analyze**: ``stepscope analyze FILE`` (terminal report) with an empty cache: parse, linking,
  cache write, every analysis, the advisor and the report.
* **cache entry**: the bytes of the entry that run wrote, against the input's.
* **reopen**: ``stepscope.load(FILE)`` from that entry (time inside the process, imports excluded).
* **warm analyze**: ``stepscope analyze FILE`` again: reopen + analyses + advisor + report.

Wall seconds, CPU seconds (user + system of the whole process tree: RUSAGE_CHILDREN around the run) and the peak RSS
of the tree (every process's RSS summed, sampled every 20 ms with psutil). The machine's load average
is printed with each row: on a shared machine, compare CPU seconds.

The bar: cold analyze ≤ 5 s, reopen ≤ 1 s, cache entry ≤ the input's size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from make_traces import DEFAULT_OUT, make_dense  # noqa: E402

REOPEN = """
import json, sys, time
import stepscope
load = stepscope.load  # imports the reader ('import stepscope' alone is light)
t0 = time.perf_counter()
trace = load(sys.argv[1])
print(json.dumps({"work_s": time.perf_counter() - t0, "events": trace.event_count}))
"""


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    load: float
    stdout: str


def run(cmd: list[str], env: dict[str, str]) -> Run:
    """``cmd`` in a fresh process: wall, CPU of the tree, peak RSS of the tree (sampled)."""
    t0 = time.perf_counter()
    # run in the timed checkout: ``python -m`` / ``-c`` put the working directory first on sys.path
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=env["PYTHONPATH"])
    ps = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [ps, *ps.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode()[-2000:]}")
    return Run(wall, 0.0, peak / 2**20, os.getloadavg()[0], out.decode())


def timed(cmd: list[str], env: dict[str, str]) -> Run:
    """:func:`run` with the tree's CPU seconds from RUSAGE_CHILDREN before / after."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = run(cmd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r.cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r


def entry_bytes(cache: Path) -> int:
    return sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="cold / reopen / warm rounds (the fastest is kept)")
    ap.add_argument("--keep-cache", type=Path, default=None, help="leave the cache entry in this directory")
    ap.add_argument("--code", type=Path, default=BENCH.parent, help="checkout whose stepscope is timed")
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args()
    trace = make_dense(args.events, DEFAULT_OUT)
    size = trace.stat().st_size
    exe = [sys.executable, "-m", "stepscope"]
    rows: dict[str, list[Run]] = {"cold analyze": [], "reopen": [], "warm analyze": []}
    cache_bytes = 0
    reopen_work: list[float] = []
    for _ in range(args.repeat):
        cache = Path(tempfile.mkdtemp(prefix="stepscope-dense-"))
        env = {**os.environ, "STEPSCOPE_CACHE_DIR": str(cache), "PYTHONPATH": str(args.code.resolve())}
        try:
            rows["cold analyze"].append(timed([*exe, "analyze", str(trace.resolve())], env))
            cache_bytes = entry_bytes(cache)
            r = timed([sys.executable, "-c", REOPEN, str(trace.resolve())], env)
            reopen_work.append(float(json.loads(r.stdout.strip().splitlines()[-1])["work_s"]))
            rows["reopen"].append(r)
            rows["warm analyze"].append(timed([*exe, "analyze", str(trace.resolve())], env))
        finally:
            if args.keep_cache is not None:
                shutil.rmtree(args.keep_cache, ignore_errors=True)
                shutil.move(str(cache), args.keep_cache)
            else:
                shutil.rmtree(cache, ignore_errors=True)
    print(f"code: {args.code.resolve()}; input: {trace} ({size / 1e6:.0f} MB, {args.events:,} events); "
          f"cores: {os.cpu_count()}")
    print("| what | wall s | CPU s | peak RSS (tree) | load avg |")
    print("|---|---:|---:|---:|---:|")
    best = {}
    for name, runs in rows.items():
        r = min(runs, key=lambda x: x.wall_s)
        best[name] = r
        print(f"| {name} | {r.wall_s:.2f} | {r.cpu_s:.2f} | {r.peak_rss_mib:,.0f} MiB | {r.load:.1f} |")
    print(f"reopen, inside the process (imports excluded): {min(reopen_work):.3f} s")
    print(f"cache entry: {cache_bytes / 1e6:.1f} MB = {cache_bytes / size:.3f} x the input ({size / 1e6:.0f} MB)")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "input_bytes": size, "events": args.events, "cache_bytes": cache_bytes,
            "reopen_work_s": min(reopen_work),
            **{k: {"wall_s": v.wall_s, "cpu_s": v.cpu_s, "peak_rss_mib": v.peak_rss_mib, "load": v.load}
               for k, v in best.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
