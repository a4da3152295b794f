"""Runs cases on a few drivers at once, classifies each, keeps the inputs of crashes and hangs, and
writes the summary. ``python -m tests.fuzz --help`` for the options."""

from __future__ import annotations

import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.cases import REPO, Case, Seed, make_case, prepare_seeds
from tests.fuzz.outcome import CRASH, HANG, OUTCOMES, classify, noisy, signature

RESTART_EVERY = 200  # invocations per driver process before a fresh one (bounds leaks)
CLEAR_CACHE_EVERY = 50  # invocations between two wipes of a driver's cache folder


@dataclass
class Ended:
    rc: int | None  # None: did not end in time
    stderr: str
    secs: float
    stack: str = ""  # a hang's thread stacks


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "STEPSCOPE_CACHE_DIR": str(cache), "COLUMNS": "120"}


class Driver:
    """A ``tests.fuzz.driver`` process that runs invocations in-process, restarted when it dies,
    hangs, or has run :data:`RESTART_EVERY` of them."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.cache = work / "cache"
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def _start(self) -> None:
        self.cache.mkdir(parents=True, exist_ok=True)
        (self.work / "hang.txt").unlink(missing_ok=True)
        r, w = os.pipe()
        self.log = open(self.work / "driver.log", "ab")  # noqa: SIM115 - closed in _stop
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.driver", str(w), str(self.work / "hang.txt")],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.log,
                                     pass_fds=(w,), cwd=REPO, env=_env(self.cache))
        os.close(w)
        self.reply = os.fdopen(r, "rb")
        self.runs = 0

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.reply.close()
            self.log.close()
            self.proc = None

    def run(self, argv: list[str], timeout: float) -> Ended:
        if self.proc is None or self.runs >= RESTART_EVERY:
            self.stop()
            self._start()
        if self.runs % CLEAR_CACHE_EVERY == 0:
            shutil.rmtree(self.cache, ignore_errors=True)
        assert self.proc is not None and self.proc.stdin is not None
        self.runs += 1
        t0 = time.perf_counter()
        self.proc.stdin.write((json.dumps({"argv": argv, "timeout": timeout}) + "\n").encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.reply], [], [], timeout + 30)
        line = self.reply.readline() if ready else b""
        if line:
            res = json.loads(line)
            return Ended(res["rc"], res["stderr"], res["secs"])
        secs = time.perf_counter() - t0
        alive = self.proc.poll() is None
        rc = self.proc.returncode
        self.stop()
        hang = self.work / "hang.txt"
        stack = hang.read_text(errors="replace") if hang.exists() else ""
        if alive or stack.strip():
            return Ended(None, "", secs, stack)
        log = (self.work / "driver.log").read_text(errors="replace")[-4000:]
        return Ended(rc or -9, f"driver died\n{log}", secs)


class Subprocess:
    """Each invocation as its own ``python -m stepscope`` (slow; the reference the driver must match)."""

    def __init__(self, work: Path) -> None:
        self.cache = work / "cache"

    def run(self, argv: list[str], timeout: float) -> Ended:
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, "-m", "stepscope", *argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout, cwd=REPO, env=_env(self.cache))
        except subprocess.TimeoutExpired:
            return Ended(None, "", time.perf_counter() - t0)
        return Ended(p.returncode, p.stderr.decode(errors="replace"), time.perf_counter() - t0)

    def stop(self) -> None:
        pass


@dataclass
class Result:
    case: Case
    outcome: str
    sig: str
    rc: int | None
    secs: float
    noisy: bool
    stderr_head: str
    run_seed: int = 0

    def row(self) -> dict[str, Any]:
        return {**asdict(self.case), "run_seed": self.run_seed, "outcome": self.outcome, "signature": self.sig,
                "rc": self.rc, "secs": round(self.secs, 3), "noisy": self.noisy, "stderr": self.stderr_head}


@dataclass
class Run:
    out: Path
    seeds: list[Seed]
    run_seed: int
    timeout: float
    subprocess_mode: bool
    commands: list[str] | None
    results: list[Result] = field(default_factory=list)
    harness_errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def one(self, runner: Driver | Subprocess, index: int, work: Path) -> Result:
        case_dir = work / "case"
        shutil.rmtree(case_dir, ignore_errors=True)
        case = make_case(self.run_seed, index, self.seeds, case_dir, self.commands)
        argv = [a.replace("{case}", str(case_dir)) for a in case.argv]
        end = runner.run(argv, self.timeout)
        outcome = classify(end.rc, end.stderr)
        sig = signature(outcome, end.rc, end.stderr, end.stack)
        if outcome in (CRASH, HANG):
            self._keep(case, case_dir, end, sig)
        head = end.stderr.strip().splitlines()[-1][:300] if end.stderr.strip() else ""
        return Result(case, outcome, sig, end.rc, end.secs, noisy(end.rc, end.stderr), head, self.run_seed)

    def _keep(self, case: Case, case_dir: Path, end: Ended, sig: str) -> None:
        with self.lock:
            group = self.out / "crashes" / _slug(sig)
            if group.exists() and len(list(group.iterdir())) >= 3:
                return
            dst = group / f"{case.index:06d}"
            group.mkdir(parents=True, exist_ok=True)
        shutil.copytree(case_dir, dst, symlinks=True)
        argv = [a.replace("{case}", str(dst)) for a in case.argv]
        (dst / "stderr.txt").write_text(end.stderr + end.stack)
        (dst / "case.json").write_text(json.dumps({**asdict(case), "signature": sig, "rc": end.rc}, indent=1))
        env = "PYTHONPATH=$PWD STEPSCOPE_CACHE_DIR=$(mktemp -d)"
        (dst / "repro.sh").write_text(f"cd {shlex.quote(str(REPO))} && {env} "
                                      f"{shlex.quote(sys.executable)} -m stepscope {shlex.join(argv)}\n")


def _slug(sig: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in sig)[:120]


def run(n: int, run_seed: int, jobs: int, out: Path, timeout: float = 60, start: int = 0,
        subprocess_mode: bool = False, formats: list[str] | None = None, commands: list[str] | None = None,
        progress: bool = True) -> dict[str, Any]:
    """Run the cases ``start .. start+n-1`` of ``run_seed``; returns the summary (also written to
    ``out/summary.json``, with one line a case in ``out/results.jsonl``)."""
    out.mkdir(parents=True, exist_ok=True)
    seed_dir = out / "seeds"
    shutil.rmtree(seed_dir, ignore_errors=True)
    seed_dir.mkdir()
    t0 = time.perf_counter()
    state = Run(out, prepare_seeds(seed_dir, formats), run_seed, timeout, subprocess_mode, commands)
    todo = iter(range(start, start + n))
    log = (out / "results.jsonl").open("a")

    def worker(j: int) -> None:
        work = out / "work" / f"j{j}"
        work.mkdir(parents=True, exist_ok=True)
        runner: Driver | Subprocess = Subprocess(work) if subprocess_mode else Driver(work)
        try:
            while True:
                with state.lock:
                    index = next(todo, None)
                if index is None:
                    return
                try:
                    res = state.one(runner, index, work)
                except Exception as exc:  # the harness's own failure (a mutator): told, never hidden
                    print(f"  case {index}: harness error {type(exc).__name__}: {exc}", file=sys.stderr)
                    with state.lock:
                        state.harness_errors += 1
                    continue
                with state.lock:
                    state.results.append(res)
                    log.write(json.dumps(res.row()) + "\n")
                    if progress and len(state.results) % 100 == 0:
                        print(f"  {len(state.results):,}/{n:,} in {time.perf_counter() - t0:,.0f} s: "
                              f"{dict(Counter(r.outcome for r in state.results))}", flush=True)
        finally:
            runner.stop()

    threads = [threading.Thread(target=worker, args=(j,)) for j in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    shutil.rmtree(out / "work", ignore_errors=True)
    summary = summarize(state.results, time.perf_counter() - t0, run_seed, start, jobs, subprocess_mode)
    summary["harness_errors"] = state.harness_errors
    if not subprocess_mode:
        summary["confirmed"] = confirm(out, timeout)
    shutil.rmtree(seed_dir, ignore_errors=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def summarize(results: list[Result], wall_s: float, run_seed: int, start: int, jobs: int,
              subprocess_mode: bool) -> dict[str, Any]:
    rows = [r.row() for r in results]
    return {"seed": run_seed, "start": start, "jobs": jobs, "wall_s": round(wall_s, 1),
            "mode": "subprocess" if subprocess_mode else "driver", **tables(rows)}


def tables(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Outcome counts of ``results.jsonl`` rows: in all, per format, per command; the crash groups."""
    def table(key: str) -> dict[str, dict[str, int]]:
        t: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys([*OUTCOMES, "noisy", "n"], 0))
        for r in rows:
            row = t[r[key]]
            row[r["outcome"]] += 1
            row["n"] += 1
            row["noisy"] += r["noisy"]
        return dict(sorted(t.items()))

    sigs = Counter(r["signature"] for r in rows if r["outcome"] in (CRASH, HANG))
    return {"inputs": len(rows), "outcomes": dict(Counter(r["outcome"] for r in rows)), "by_format": table("fmt"),
            "by_command": table("command"), "signatures": dict(sigs.most_common()),
            "secs_max": max((r["secs"] for r in rows), default=0.0)}


def merge(dirs: list[Path]) -> dict[str, Any]:
    """One summary of the chunks of a long run (their ``results.jsonl``; a case run twice counts once)."""
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    walls, read = [], []
    for d in dirs:
        summary = d / "summary.json"
        if summary.exists():
            walls.append(json.loads(summary.read_text())["wall_s"])
        results = d / "results.jsonl"
        read += [json.loads(line) for line in (results.read_text().splitlines() if results.exists() else [])]
    seeds = {r["run_seed"] for r in read if "run_seed" in r}
    for r in read:  # later folders win; rows written before rows named their seed take the run's one
        r.setdefault("run_seed", next(iter(seeds)) if len(seeds) == 1 else 0)
        rows[(r["run_seed"], r["index"])] = r
    seeds = {r["run_seed"] for r in read}
    indices = sorted(i for _s, i in rows)
    return {"seed": ",".join(map(str, sorted(seeds))), "start": indices[0] if indices else 0, "jobs": len(dirs),
            "wall_s": round(sum(walls), 1), "mode": f"{len(dirs)} chunks merged", **tables(list(rows.values()))}


def confirm(out: Path, timeout: float) -> dict[str, str]:
    """Run the first kept example of each crash / hang as a real ``python -m stepscope``: the
    outcome it has there (it should be the same)."""
    found: dict[str, str] = {}
    for group in sorted((out / "crashes").glob("*")) if (out / "crashes").exists() else []:
        first = sorted(group.iterdir())[0]
        case = json.loads((first / "case.json").read_text())
        argv = [a.replace("{case}", str(first)) for a in case["argv"]]
        end = Subprocess(first).run(argv, timeout)
        outcome = classify(end.rc, end.stderr)
        (first / "subprocess_stderr.txt").write_text(end.stderr)
        shutil.rmtree(first / "cache", ignore_errors=True)
        found[case["signature"]] = outcome
    return found


def render(summary: dict[str, Any]) -> str:
    """The summary as plain-text tables."""
    cols = [*OUTCOMES, "noisy"]
    rate = f"{summary['inputs'] / summary['wall_s']:.1f} inputs/s, " if summary["wall_s"] else ""
    lines = [f"stepscope fuzz: {summary['inputs']:,} inputs (seed {summary['seed']}, from {summary['start']}), "
             f"{summary['jobs']} jobs, {summary['mode']}, {summary['wall_s']:,} s wall, "
             f"{rate}slowest {summary['secs_max']:.2f} s"]
    for key in ("by_format", "by_command"):
        lines.append("")
        lines.append(f"{key[3:]:<12}{'inputs':>8}" + "".join(f"{c:>9}" for c in cols))
        rows = summary[key]
        total = {c: sum(r[c] for r in rows.values()) for c in ["n", *cols]}
        for name, r in [*rows.items(), ("total", total)]:
            lines.append(f"{name:<12}{r['n']:>8}" + "".join(f"{r[c]:>9}" for c in cols))
    lines.append("")
    if summary["signatures"]:
        lines.append("crashes and hangs (count, where; inputs under OUT/crashes/):")
        for sig, count in summary["signatures"].items():
            again = summary.get("confirmed", {}).get(sig)
            lines.append(f"  {count:>5}  {sig}" + (f"  [as a subprocess: {again}]" if again else ""))
    else:
        lines.append("no crash, no hang")
    return "\n".join(lines)
