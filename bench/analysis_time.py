"""Time of the analyses and the advisor on already loaded traces: ``run_advisor(analyze(trace))``,
best of N, a fresh trace object (from the cache) each time, so no memo is reused.

One command:  python bench/analysis_time.py [--repeat 3] TRACE [TRACE ...]
(run it with ``PYTHONPATH=<checkout>`` to time another commit of the same code)."""

from __future__ import annotations

import argparse
import time

import stepscope
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze


def best_of(path: str, repeat: int) -> float:
    stepscope.load(path)  # fill the cache: the timing is the analysis, not the parse
    times = []
    for _ in range(repeat):
        trace = stepscope.load(path)
        t0 = time.perf_counter()
        run_advisor(analyze(trace))
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for path in args.traces:
        print(f"{best_of(path, args.repeat):8.3f} s  {path}")


if __name__ == "__main__":
    main()
