"""Time of the what-if replay on a large trace: the step graph and every remedy's replay per rank.

Usage: ``python bench/whatif_replay.py [PATH]`` (default: ``bench/data/kineto_1000mb.json``, made
by ``python bench/make_traces.py --sizes 1000``). Prints the load time (cached after the first
run), the graph build and the replay of every remedy in :data:`REMEDIES`, and the steps replayed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import stepscope
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.remedies import REMEDIES
from stepscope.analysis.whatif.replay import Durations, replay

DEFAULT = Path(__file__).resolve().parent / "data" / "kineto_1000mb.json"


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    t0 = time.perf_counter()
    trace = stepscope.load(path)
    t1 = time.perf_counter()
    print(f"{path.name}: {trace.event_count:,} events, load {t1 - t0:.2f} s")
    for rank in trace.rank_ids:
        g = step_graph(trace, rank)
        t2 = time.perf_counter()
        base = Durations.measured(g)
        steps = 0
        for change in REMEDIES.values():
            rp = replay(g, change.change(trace, g, base))
            steps += len(rp.step_ns)
        t3 = time.perf_counter()
        measured = g.steps.measured_end_ns - g.steps.measured_start_ns
        identity = replay(g, base).step_ns
        err_pct = float((abs(identity - measured) / measured.clip(min=1)).max() * 100) if len(measured) else 0.0
        print(f"rank {rank}: graph {t2 - t1:.2f} s ({len(g.device.row):,} device activities, "
              f"{len(g.syncs.row):,} blocking calls); {len(REMEDIES)} remedies replayed over {steps:,} steps "
              f"in {t3 - t2:.2f} s; graph + replays {t3 - t1:.2f} s; identity replay max error {err_pct:.4f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
