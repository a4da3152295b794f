"""Many ranks in bounded memory: make N rank files from a real trace, analyse them, report time and RSS.

``python bench/cluster_scale.py --ranks N --mb-per-rank M [--engine local|ray] [--whole]``

1. **Make** N Kineto rank files (``bench/out/cluster_<N>x<M>mb/worker<r>.json``, ``--out DIR`` for another
   folder than ``bench/out``; reused when present)
   from a real rank trace (``param_dlrm/dlrm_8rank_v100`` rank 0: 3.3k events, 0.95 MB, one step,
   8 NCCL kernels): the step repeated ``M / 0.71`` times (its size in compact JSON; before
   2026-11-27 ``M / 0.95``: ``--mb-per-rank 100`` made 76 MB files) (timestamps shifted by one period,
   ``ProfilerStep#`` renumbered, correlation / External ids and flow ids offset per copy),
   ``distributedInfo`` rewritten (rank r, world size N) and, per rank and copy, a random time shift
   of 0-50 µs (jitter). Planted: **slow ranks** (every 37th rank from 5: a 2 ms
   ``planted_slow_compute`` kernel before the step's first all-reduce, everything after it 2 ms
   later; every other rank's first all-reduce lasts 2 ms longer: it waits for them), and a **slow
   link** (ranks 2 and 3: every send/recv kernel 3x as long).
2. **Single-file ingest rate**: ``stepscope.load(rank 0's file, use_cache=False)`` in a fresh process,
   best of 3 (the local engine, every core on one file).
3. **Analyse**: ``stepscope analyze DIR --json --map-reduce`` (``--whole``: ``--no-map-reduce``) with
   a fresh cache, sampled every 50 ms: the driver's peak RSS (its ``VmHWM``), the process tree's peak
   (Σ RSS of the driver and every descendant: workers, Ray's processes), and the largest single
   process (``getrusage(RUSAGE_CHILDREN)``).
4. **CPU** (a shared box's wall times swing with the other tenants' load; CPU seconds much less):
   the command's CPU seconds (the driver and every process it waited for: the local engine's map
   workers; not Ray's) against N × the single-file load's CPU seconds (``cpu_vs_ingest``), next to
   the wall ratio ``wall_vs_ingest`` = wall ÷ (bytes ÷ rate); the bar is 1.3 on an idle machine.

One JSON line per run is appended to ``bench/out/cluster_scale.jsonl`` and printed.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import psutil

REPO = Path(__file__).resolve().parents[1]
SOURCE = Path("/work/shared/traces/param_dlrm/dlrm_8rank_v100/worker0_step_12.1694128201545.pt.trace.json.gz")
OUT = REPO / "bench" / "out"
SLOW_NS_US = 2000  # planted extra compute on a slow rank, µs
MIB = 1 << 20


def slow_ranks(n: int) -> list[int]:
    return list(range(5, n, 37)) if n > 5 else [n - 1]


def _copy_event(e: dict[str, Any], k: int, shift: float, offs: tuple[int, int, int]) -> dict[str, Any]:
    e = dict(e)
    if "ts" in e:
        e["ts"] = e["ts"] + shift
    if e.get("ph") in ("s", "f", "t") and "id" in e:
        e["id"] = e["id"] + offs[1]
    name = e.get("name")
    if isinstance(name, str) and name.startswith("ProfilerStep#"):
        e["name"] = f"ProfilerStep#{int(name[13:]) + k}"
    args = e.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key in ("External id", "external id"):
            if key in args:
                args[key] += offs[0]
        if "correlation" in args:
            args["correlation"] += offs[1]
        e["args"] = args
    return e


def make_rank(src: dict[str, Any], rank: int, n: int, copies: int, path: Path) -> None:
    events = [e for e in src["traceEvents"] if e.get("ph") != "M" and e.get("cat") != "Trace"]
    once = [e for e in src["traceEvents"] if e.get("ph") == "M" or e.get("cat") == "Trace"]
    timed = [e for e in events if "ts" in e]
    t0 = min(e["ts"] for e in timed)
    period = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + SLOW_NS_US + 1000
    first_ar = min((e for e in events if e.get("cat") == "kernel" and "AllReduce" in e["name"]), key=lambda e: e["ts"])
    cut = first_ar["ts"]
    max_ext = max(int(e.get("args", {}).get("External id", 0) or 0) for e in events) + 1
    max_corr = max([int(e.get("args", {}).get("correlation", 0) or 0) for e in events] +
                   [int(e.get("id", 0)) for e in events if e.get("ph") in ("s", "f")]) + 1
    slow = rank in slow_ranks(n)
    rng = random.Random(rank)
    out: list[dict[str, Any]] = []
    for k in range(copies):  # per copy of the step
        jitter = rng.uniform(0, 50)
        offs = (k * max_ext, k * max_corr, 0)
        for e in events:
            late = slow and e.get("ts", -1) >= cut
            c = _copy_event(e, k, k * period + jitter + (SLOW_NS_US if late else 0), offs)
            if c.get("cat") == "kernel":
                if e is first_ar and not slow:
                    c["dur"] = c["dur"] + SLOW_NS_US  # waits for the slow ranks
                if rank in (2, 3) and "SendRecv" in c["name"]:
                    c["dur"] = c["dur"] * 3  # the slow link 2 <-> 3
            out.append(c)
        if slow:
            out.append({"ph": "X", "cat": "kernel", "name": "planted_slow_compute", "pid": first_ar["pid"],
                        "tid": first_ar["tid"], "ts": cut + k * period + jitter, "dur": SLOW_NS_US,
                        "args": {"device": 0, "stream": first_ar["args"].get("stream", 7), "correlation": -1}})
    for e in once:
        e = dict(e)
        if e.get("cat") == "Trace":
            e["dur"] = copies * period
        out.append(e)
    doc = {k: v for k, v in src.items() if k != "traceEvents"}
    doc["distributedInfo"] = {**src.get("distributedInfo", {}), "rank": rank, "world_size": n}
    doc["traceEvents"] = out
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(msgspec.json.encode(doc))
    tmp.replace(path)


def make_run(n: int, mb: float, out: Path = OUT) -> Path:
    run = out / f"cluster_{n}x{mb:g}mb"
    done = run / "DONE"
    if done.exists():
        return run
    run.mkdir(parents=True, exist_ok=True)
    src = json.loads(gzip.decompress(SOURCE.read_bytes()))
    step_mb = len(msgspec.json.encode([e for e in src["traceEvents"] if e.get("ph") != "M"])) / 1e6
    copies = max(1, round(mb / step_mb))  # the step is 0.71 MB in compact JSON: M MB files
    for r in range(n):
        make_rank(src, r, n, copies, run / f"worker{r}.json")
    done.write_text(f"{n} ranks x {copies} copies\n")
    return run


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def ingest_rate(file: Path, env: dict[str, str]) -> tuple[float, float]:
    """Bytes per second of one rank file through ``stepscope.load`` (no cache), best of 3, and the CPU
    seconds (every process: the local engine's workers too) of the load itself in that best run."""
    code = ("import sys,time,resource\nfrom stepscope import load\n"
            "def cpu():\n"
            "  s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "  return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime\n"
            "c=cpu(); t=time.perf_counter(); load(sys.argv[1], use_cache=False)\n"
            "print(time.perf_counter()-t, cpu()-c)")
    runs = [tuple(map(float, subprocess.run([sys.executable, "-c", code, str(file)], env=env, check=True,
                                            capture_output=True, text=True).stdout.split())) for _ in range(3)]
    wall, cpu = min(runs)
    return file.stat().st_size / wall, cpu


def _tree_rss(p: psutil.Process) -> int:
    total = 0
    for q in [p, *p.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += q.memory_info().rss
    return total


def analyse(run: Path, engine: str, whole: bool, env: dict[str, str]) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp()) / "doc.json"
    cmd = [sys.executable, "-m", "stepscope", "analyze", str(run), "--json", "-o", str(out),
           "--no-map-reduce" if whole else "--map-reduce", "--engine", engine]
    t0, cpu0 = time.perf_counter(), _children_cpu_s()
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    p = psutil.Process(proc.pid)
    driver_hwm = tree_peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                hwm = next((int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM")), 0)
            driver_hwm = max(driver_hwm, hwm)
            tree_peak = max(tree_peak, _tree_rss(p))
        except (OSError, psutil.Error):
            pass
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    proc.wait()
    cpu = _children_cpu_s() - cpu0  # the command and every process it waited for (the map workers)
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"analyze failed ({proc.returncode}): {err[-2000:]}")
    doc = json.loads(out.read_text())
    shutil.rmtree(out.parent)
    cluster = doc.get("cluster") or {}
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "driver_peak_mib": round(driver_hwm / MIB, 1),
            "tree_peak_mib": round(tree_peak / MIB, 1),
            "largest_process_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
            "slow_ranks": cluster.get("slow_ranks"), "ranks_in_doc": len(doc["ranks"])}


def _found(r: dict[str, Any]) -> str:
    found, planted = r["slow_ranks"], r["planted_slow"]
    return f"the {len(planted)} planted" if found == planted else f"{found} (planted {planted})"


def table(path: Path) -> str:
    """The runs of ``cluster_scale.jsonl`` as a Markdown table (docs/scale.md, docs/benchmarks.md)."""
    head = ("| ranks × MB | total MB | path, engine | wall s | driver peak MiB | tree peak MiB | largest process MiB "
            "| 1-file ingest MB/s | 1.3 × bytes ÷ rate s | slow ranks found |")
    lines = [head, "|" + "---|" * 10]
    for line in path.read_text().splitlines():
        r = json.loads(line)
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(f"| {r['ranks']} × {r['mb_per_rank']} | {r['total_mb']:,} | {r['path']}, {r['engine']}{note} "
                     f"| {r['wall_s']} | {r['driver_peak_mib']} | {r['tree_peak_mib']} | {r['largest_process_mib']} "
                     f"| {r['ingest_mb_s']} | {r['bar_s']} | {_found(r)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:] == ["--table"]:
        print(table(OUT / "cluster_scale.jsonl"))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--mb-per-rank", type=float, default=1.0)
    ap.add_argument("--engine", choices=("local", "ray"), default="local")
    ap.add_argument("--whole", action="store_true", help="the whole-model path instead (--no-map-reduce)")
    ap.add_argument("--delete", action="store_true", help="remove the generated run afterwards")
    ap.add_argument("--out", type=Path, default=OUT, help="where to make the run (default bench/out)")
    ap.add_argument("--make-only", action="store_true", help="make the run's files, analyse nothing")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    run = make_run(a.ranks, a.mb_per_rank, a.out)
    made_s = time.perf_counter() - t0
    if a.make_only:
        print(f"{run}: made in {made_s:.0f} s")
        return 0
    files = sorted(run.glob("worker*.json"))
    total = sum(f.stat().st_size for f in files)
    cache = tempfile.mkdtemp(prefix="stepscope-bench-cache-")
    env = {**os.environ, "PYTHONPATH": str(REPO), "STEPSCOPE_CACHE_DIR": cache}
    try:
        rate, ingest_cpu = ingest_rate(files[0], env)
        res = analyse(run, a.engine, a.whole, env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    row = {"ranks": a.ranks, "mb_per_rank": round(files[0].stat().st_size / 1e6, 2), "total_mb": round(total / 1e6, 1),
           "engine": a.engine, "path": "whole" if a.whole else "map-reduce", "make_s": round(made_s, 1),
           "ingest_mb_s": round(rate / 1e6, 1), "bar_s": round(1.3 * total / rate, 1),
           "ingest_cpu_s_per_file": round(ingest_cpu, 3), **res,
           "cpu_vs_ingest": round(res["cpu_s"] / (ingest_cpu * a.ranks), 2),
           "wall_vs_ingest": round(res["wall_s"] / (total / rate), 2),
           "driver_mib_per_rank": round(res["driver_peak_mib"] / a.ranks, 3), "planted_slow": slow_ranks(a.ranks)}
    print(json.dumps(row))
    OUT.mkdir(exist_ok=True)
    with open(OUT / "cluster_scale.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")
    if a.delete:
        shutil.rmtree(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
