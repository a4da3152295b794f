"""Exposed vs overlapped communication per rank and step (docs/analyses/exposed_comm.md), on a
hand-made 2-rank run of two 1000 µs steps (µs):

* rank 0, step 1: compute [0, 600), all-reduce [400, 800) → overlapped 200, exposed 200;
  step 2: compute [1000, 1500), all-reduce [1500, 1700) → overlapped 0, exposed 200.
* rank 1, step 1: compute [0, 900), all-reduce [100, 500) → overlapped 400, exposed 0;
  step 2: all-reduce [1000, 1300), compute [1200, 1400) → overlapped 100, exposed 200.

Totals: rank 0 exposed 400 of 2000 (20 %), overlapped 200 of 600 comm; rank 1 exposed 200 (10 %),
overlapped 500 of 700. The JSON table holds the same numbers as each rank's ``distributed.steps``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from rich.console import Console

from stepscope.analysis.bundle import analyze
from stepscope.analysis.exposed_comm import combine_exposed, exposed_record
from stepscope.analysis.registry import EXPOSED_COMM
from stepscope.model.trace import Trace
from stepscope.report import json_out
from stepscope.report.views.distributed import render_exposed_comm
from tests.builders import TraceBuilder, kargs, load_ranks

US = 1000
AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
PLAN = {0: [((0, 600), (400, 800)), ((1000, 1500), (1500, 1700))],
        1: [((0, 900), (100, 500)), ((1200, 1400), (1000, 1300))]}


def two_ranks(tmp_path: Path) -> Trace:
    bs = []
    for rank, steps in PLAN.items():  # two ranks
        b = TraceBuilder(rank=rank, world_size=2)
        for i, (comp, comm) in enumerate(steps):  # two steps
            b.step(i + 1, i * 1000, 1000)
            launch = i * 1000 + 1
            b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=launch, launch_dur=1, ts=comp[0], dur=comp[1] - comp[0])
            b.launch_kernel(AR, launch_ts=launch + 2, launch_dur=1, ts=comm[0], dur=comm[1] - comm[0], stream=20,
                            **kargs({"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                                     "dtype": "Float", "Process Group Ranks": "[0, 1]"}))
        bs.append(b)
    return load_ranks(bs, tmp_path)


def test_per_rank_and_step_exposed_and_overlapped(tmp_path: Path) -> None:
    trace = two_ranks(tmp_path)
    e = EXPOSED_COMM.compute(trace)
    s = e.steps
    assert s.rank.tolist() == [0, 0, 1, 1] and s.step.tolist() == [1, 2, 1, 2]
    assert s.exposed_ns.tolist() == [200 * US, 200 * US, 0, 200 * US]
    assert s.overlapped_ns.tolist() == [200 * US, 0, 400 * US, 100 * US]
    assert s.comm_ns.tolist() == [400 * US, 200 * US, 400 * US, 300 * US]
    assert s.exposed_pct.tolist() == pytest.approx([20.0, 20.0, 0.0, 20.0])
    assert s.overlapped_pct.tolist() == pytest.approx([50.0, 0.0, 100.0, 100 / 3])
    k = e.ranks
    assert k.exposed_ns.tolist() == [400 * US, 200 * US] and k.overlapped_ns.tolist() == [200 * US, 500 * US]
    assert k.exposed_pct.tolist() == pytest.approx([20.0, 10.0])
    records = {r: pickle.loads(pickle.dumps(exposed_record(trace, r))) for r in trace.rank_ids}
    assert combine_exposed(records).steps.exposed_ns.tolist() == s.exposed_ns.tolist()


def test_the_json_table_holds_the_distributed_views_numbers(tmp_path: Path) -> None:
    doc = json_out.to_json(analyze(two_ranks(tmp_path)))
    table = doc["cluster"]["exposed_comm"]
    assert [r["exposed_ms"] for r in table["steps"]] == [0.2, 0.2, 0.0, 0.2]
    per_rank = [(r["rank"], s["step"], s["communication_ms"], s["overlap_ms"]) for r in doc["ranks"]
                for s in r["distributed"]["steps"]]
    assert [(r["rank"], r["step"], r["exposed_ms"], r["overlapped_ms"]) for r in table["steps"]] == per_rank
    assert [r["exposed_ms"] for r in table["ranks"]] == [0.4, 0.2]


def test_the_terminal_table_names_the_most_exposed_rank(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    render_exposed_comm(EXPOSED_COMM.compute(two_ranks(tmp_path)), console, 10)
    text = console.export_text()
    assert "most exposed: rank 0, 0.400 ms over its steps (20.0 % of its step time" in text
    assert text.count("0.200") >= 4


def test_a_short_top_shows_the_most_exposed_steps(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    render_exposed_comm(EXPOSED_COMM.compute(two_ranks(tmp_path)), console, 1)
    text = console.export_text()
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert "the 1 most exposed of 4" in text and len(rows) == 1 and rows[0].startswith("│ 0    │ 1    │")
