"""Graph replays, compiled kernels and inference phases on the shared vLLM and SD 3.5 traces.

Every expectation is derived here from the raw JSON (or taken from SOURCES.md / TraceLens's gold
CSVs), not from stepscope's output.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from stepscope import load
from stepscope.analysis.compiled import compute_compiled
from stepscope.analysis.graphs import compute_graphs
from stepscope.analysis.phases import compute_phases
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

VLLM = {"tracelens/vllm_gptoss_mi300x_decode_bs32_full_hipgraph": (1, 421),
        "tracelens/vllm_gptoss_mi300x_prefilldecode_piecewise_hipgraph": (25, 361)}
SD35 = "tracelens/xdit_sd3.5_torch_compile_mi300x"


@cache
def _trace(path: Path) -> Trace:
    return load(path)


def _capture_nodes(case: Path) -> list[list[tuple[str, str]]]:
    """Per capture window (time order): (kernel named by the launch call, innermost cpu_op around it),
    straight from the capture trace's JSON."""
    f = next((case / "capture_traces").glob("*.json.gz"))
    with gzip.open(f) as fh:
        ev: list[dict[str, Any]] = json.load(fh)["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    rt = sorted((e for e in ev if e.get("cat") == "cuda_runtime"), key=lambda e: e["ts"])
    windows: list[list[tuple[str, str]]] = []
    cur: list[tuple[str, str]] | None = None
    for e in rt:  # the raw events, in time order
        if e["name"].endswith("StreamBeginCapture"):
            cur = []
        elif e["name"].endswith("StreamEndCapture") and cur is not None:
            windows.append(cur)
            cur = None
        elif cur is not None and "LaunchKernel" in e["name"]:
            around = [o for o in ops if o["tid"] == e["tid"] and o["ts"] <= e["ts"] <= o["ts"] + o["dur"]]
            inner = min(around, key=lambda o: o["dur"])["name"] if around else ""
            cur.append((e["args"]["kernel"], inner))
    return windows


@pytest.mark.parametrize("path", sorted(VLLM))
def test_vllm_graph_kernels_all_attributed_to_their_capture_ops(shared_traces: Path, path: str) -> None:
    """SOURCES.md §8: 1 hipGraphLaunch → 421 kernels (decode), 25 → 361 (piecewise). Each replayed node
    is named by the op that launched it at capture, and the capture's launch call named the same kernel."""
    trace = _trace(shared_traces / path)
    r = compute_graphs(trace, 0)
    launches, kernels = VLLM[path]
    assert (len(r.launches.row), r.graph_activities, r.unattributed) == (launches, kernels, 0)
    assert r.captured_pct == 100.0
    ev = trace.events
    calls = sorted(set(ev["launch"][ev["graph_node"] >= 0].tolist()), key=lambda c: int(ev["ts_ns"][c]))
    want = _capture_nodes(shared_traces / path)
    assert len(want) == launches
    for call, nodes in zip(calls, want):  # per graph launch (≤ 25)
        rows = sorted((i for i in range(len(ev)) if ev["launch"][i] == call and ev["graph_node"][i] >= 0),
                      key=lambda i: int(ev["graph_node"][i]))
        got = [(trace.strings[int(ev["name"][i])], trace.strings[int(ev["capture_op"][i])]) for i in rows]
        assert got == nodes


@pytest.mark.parametrize("path", sorted(VLLM))
def test_vllm_op_times_equal_tracelens_gold(shared_traces: Path, path: str) -> None:
    """TraceLens merges the capture trace too: its ops_summary.csv per-op kernel time (µs, float32
    sums) equals ours — capture-time ops for graph kernels plus eager ops — within 0.01 %, and its
    Count equals our calls of each op seen only at capture (vllm::moe_forward: 24 for 72 kernels)."""
    trace = _trace(shared_traces / path)
    ev = trace.events
    ours: dict[str, float] = defaultdict(float)
    for i in range(len(ev)):  # every event of a ~20k-event trace
        if ev["kind"][i] != EventKind.KERNEL:
            continue
        op = int(ev["capture_op"][i]) if ev["capture_op"][i] >= 0 else (
            int(ev["name"][ev["op"][i]]) if ev["op"][i] >= 0 else -1)
        if op >= 0:
            ours[trace.strings[op]] += int(ev["dur_ns"][i]) / 1e3
    with open(shared_traces / path / "expected_perf_csvs" / "ops_summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    gold = {row["name"]: float(row["total_direct_kernel_time_sum"]) for row in rows}
    gold_calls = {row["name"]: int(row["Count"]) for row in rows}
    r = compute_graphs(trace, 0)
    graph_ops = {n for n, _, _ in r.captured.top(100)}
    assert graph_ops <= set(gold)
    for name in graph_ops:
        assert ours[name] == pytest.approx(gold[name], rel=1e-4), name
    eager = {trace.strings[int(ev["name"][o])] for o in set(ev["op"][ev["graph_node"] < 0].tolist()) if o >= 0}
    for name, calls, _, _ in r.captured_top(100):  # ops only seen at capture: their calls are TraceLens's Count
        if name not in eager:
            assert calls == gold_calls[name], name


def test_vllm_phases(shared_traces: Path) -> None:
    """Decode window: one execute_32_context_0(…)_generation_32(sq32…) range, 32 tokens; all 434 GPU
    activities run in it, so its device span is TraceLens's total_time 10.743182 ms. Piecewise: one
    mixed step (9 prefill requests, 8155 tokens; 37 decode requests, 37 tokens) spanning 156.466416 ms."""
    d = compute_phases(_trace(shared_traces / sorted(VLLM)[0]), 0)
    assert d.steps.phase == ("decode",) and d.tokens("decode") == 32
    assert int(d.steps.device_span_ns[0]) == pytest.approx(10_743_182, abs=1)
    p = compute_phases(_trace(shared_traces / sorted(VLLM)[1]), 0)
    s = p.steps
    assert s.phase == ("mixed",) and p.tokens("mixed") == 8192
    assert (int(s.prefill_requests[0]), int(s.prefill_tokens[0]), int(s.decode_requests[0])) == (9, 8155, 37)
    assert int(s.device_span_ns[0]) == pytest.approx(156_466_416, abs=1)


def test_sd35_compiled_kernels(shared_traces: Path) -> None:
    """SOURCES.md §9: 2,076 Inductor Triton kernels of 26 names, 68.814 ms (TraceLens 'triton'
    category: 2,076 / 68.814 ms), each launched by a cpu_op of its own name; one compiled FX graph
    (fp5r5…), called 4 times, holds them all."""
    r = compute_compiled(_trace(shared_traces / SD35), 0)
    assert (len(r.triton), len(r.triton.names), r.triton_launch_op) == (2076, 26, 2076)
    assert r.triton.total_ns / 1e6 == pytest.approx(68.814, abs=5e-4)
    g = r.graphs
    assert g.name[0].startswith("CompiledFxGraph fp5r5") and int(g.calls[0]) == 4
    assert int(g.triton_kernels[0]) == 2076
