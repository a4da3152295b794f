"""The views against the gold numbers of the real traces (SOURCES.md): TB plugin, TraceLens, HTA.

Gold values are read from the gold files (``expected/``), never copied from our own output.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stepscope
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import CATEGORIES
from stepscope.analysis.kernels import compute_kernels
from stepscope.analysis.occupancy import LaunchShape, occupancy_pct
from stepscope.analysis.operators import compute_operators
from stepscope.analysis.overview import compute_overview
from stepscope.analysis.registry import ANNOTATIONS, BREAKDOWN, KERNELS, MEMORY, MODULES, OPERATORS, OVERVIEW
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
TB = TRACES / "kineto_tb_plugin"
pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"real traces not found at {TRACES}")

TB_RUNS = {"resnet50_num_workers_0": (3, 4), "resnet50_num_workers_4": (8, 9)}  # result_check_file lines
TB_NAMES = {"kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset", "runtime": "Runtime",
            "dataloader": "DataLoader", "cpu_exec": "CPU Exec", "other": "Other"}
_CACHE: dict[str, Trace] = {}


def load(path: Path) -> Trace:
    if str(path) not in _CACHE:
        _CACHE[str(path)] = stepscope.load(path, use_cache=False)
    return _CACHE[str(path)]


def tb_gold(run: str) -> dict[str, Any]:
    return json.loads((TB / "expected" / "tb_plugin_gold_summary.json").read_text())[run]  # type: ignore[no-any-return]


def tb_line(n: int) -> dict[str, Any]:
    return json.loads((TB / "expected" / "result_check_file.txt").read_text().splitlines()[n - 1])  # type: ignore[no-any-return]


def pct_of(text: str) -> float:
    return float(text.replace("%", "").strip())


@pytest.mark.parametrize("run", list(TB_RUNS))
def test_tb_average_step_and_breakdown(run: str) -> None:
    gold = tb_gold(run)
    o = compute_overview(load(TB / run), 0)
    assert o.avg_step_ns / 1e3 == pytest.approx(gold["average_step_time_us"], rel=0.01)
    avg = dict(zip(CATEGORIES, (o.breakdown.avg_category_ns / 1e3).tolist()))
    pct = dict(zip(CATEGORIES, o.breakdown.avg_category_pct.tolist()))
    for ours, theirs in TB_NAMES.items():
        us, p = gold["average_breakdown_us_and_pct"][theirs]
        assert avg[ours] == pytest.approx(us, rel=0.01, abs=1.0), ours
        assert abs(pct[ours] - p) <= 0.2, ours


@pytest.mark.parametrize("run", list(TB_RUNS))
def test_tb_per_step_breakdown(run: str) -> None:
    gold = tb_gold(run)["per_step_us"]
    bd = compute_overview(load(TB / run), 0).breakdown
    assert bd.step_labels() == [g["Step"] for g in gold]
    for i, g in enumerate(gold):
        total = sum(g[v] for v in TB_NAMES.values())
        assert bd.total_ns[i] / 1e3 == pytest.approx(total, rel=0.01)
        for j, c in enumerate(CATEGORIES):
            if c in TB_NAMES:
                assert bd.category_ns[i, j] / 1e3 == pytest.approx(g[TB_NAMES[c]], rel=0.01, abs=1.0), (i, c)


@pytest.mark.parametrize("run", list(TB_RUNS))
def test_tb_gpu_summary(run: str) -> None:
    gold = tb_gold(run)["gpu_summary"]
    o = compute_overview(load(TB / run), 0)
    assert o.device is not None and o.device.name == gold["Name"]
    assert abs(o.gpu_utilization_pct - pct_of(gold["GPU Utilization"])) <= 0.2  # type: ignore[operator]
    assert abs(o.sm_efficiency_pct - pct_of(gold["Est. SM Efficiency"])) <= 0.2  # type: ignore[operator]
    assert abs(o.achieved_occupancy_pct - pct_of(gold["Est. Achieved Occupancy"])) <= 0.2  # type: ignore[operator]
    assert abs(o.tensor_core_pct - pct_of(gold["Kernel Time using Tensor Cores"])) <= 0.2  # type: ignore[operator]


@pytest.mark.parametrize("run", list(TB_RUNS))
def test_tb_top_kernels_and_operators(run: str) -> None:
    gold = tb_gold(run)
    trace = load(TB / run)
    k = compute_kernels(trace, 0).by_name
    for (name, total_us), ours_name, ours_ns in zip(gold["top10_kernels_total_duration_us"], k.name, k.total_ns):
        assert ours_name == name
        assert ours_ns / 1e3 == pytest.approx(total_us, abs=1.0)
    ops = compute_operators(trace, 0).by_name
    name, dev_us = gold["top10_ops_device_self_time_us"][0]
    assert ops.name[0] == name
    assert ops.device_self_ns[0] / 1e3 == pytest.approx(dev_us, abs=1.0)


@pytest.mark.parametrize("run", list(TB_RUNS))
def test_tb_operator_table(run: str) -> None:
    """Every row of the plugin's operator table: calls exact, times within 1 µs (the plugin rounds)."""
    gold = {d["name"]: d for d in tb_line(TB_RUNS[run][0])["data"]}
    t = compute_operators(load(TB / run), 0).by_name
    assert sorted(t.name.tolist()) == sorted(gold)
    for i, name in enumerate(t.name.tolist()):
        g = gold[name]
        assert t.calls[i] == g["calls"], name
        for ours, key in ((t.host_self_ns, "host_self_duration"), (t.host_total_ns, "host_total_duration"),
                          (t.device_self_ns, "device_self_duration"), (t.device_total_ns, "device_total_duration")):
            assert ours[i] / 1e3 == pytest.approx(g[key], abs=1.0), (name, key)
        assert bool(t.tc_eligible[i]) == (g["tc_eligible"] == "Yes"), name


@pytest.mark.parametrize("case", ["h100_bert_small_inference", "h100_qwen1.5_0.5b_inference",
                                  "mi300x_bert_small_inference"])
def test_tracelens_gpu_busy_and_span(case: str) -> None:
    d = TRACES / "tracelens" / case
    gold = {r["type"]: float(r["time ms"]) for r in csv.DictReader((d / "expected_perf_report_csvs" /
                                                                      "gpu_timeline.csv").open())}
    o = compute_overview(load(next(d.glob("*.json.gz"))), 0)
    assert o.busy_ns / 1e6 == pytest.approx(gold["busy_time"], rel=1e-3)
    assert o.span_ns / 1e6 == pytest.approx(gold["total_time"], rel=1e-3)


def test_hta_nccl_kernels_with_collective_metadata() -> None:
    k = compute_kernels(load(TRACES / "hta" / "nccl_resnet_a100_rank0_of2" / "nccl_data.json.gz"), 0)
    c = k.collectives
    assert sum("ncclKernel" in n for n in c.name.tolist()) == 21
    assert c.collective[0] == "allreduce"
    assert c.in_nelems[0] == 2049000 and c.out_nelems[0] == 2049000
    assert c.pg_ranks[0] == "[0, 1]" and c.pg_desc[0] == "default_pg"


@pytest.mark.parametrize("path", ["kineto_tb_plugin/resnet50_num_workers_0",
                                  "hta/nccl_resnet_a100_rank0_of2/nccl_data.json.gz",
                                  "tracelens/h100_qwen1.5_0.5b_inference"])
def test_computed_occupancy_matches_recorded(path: str) -> None:
    """Kineto rounds to a whole percent and uses the 48 KiB default shared-memory limit (see
    occupancy.py), so we compare within 0.5 pp on kernels within that limit."""
    p = TRACES / path
    trace = load(next(p.glob("*.json.gz")) if p.is_dir() else p)
    rows = np.flatnonzero(trace.events["kind"] == EventKind.KERNEL).astype(np.int64)
    dev = trace.device_of_rank(0)
    assert dev is not None
    shape = LaunchShape.of_rows(trace, rows)
    ours = occupancy_pct(shape, dev)
    ok = shape.shmem_bytes <= (dev.shared_mem_per_block or 0)
    assert ok.sum() > 100
    assert np.abs(ours[ok] - trace.events["occupancy_pct"][rows][ok]).max() <= 0.5 + 1e-3


def all_traces() -> list[Path]:
    if not TRACES.is_dir():
        return []
    return sorted(p for p in TRACES.rglob("*.json.gz") if "ascend" not in str(p))


@pytest.mark.parametrize("path", all_traces(), ids=lambda p: str(p.relative_to(TRACES)))
def test_every_view_runs_or_says_what_is_missing(path: Path) -> None:
    trace = load(path)
    for a in (OVERVIEW, BREAKDOWN, OPERATORS, KERNELS, MEMORY, MODULES, ANNOTATIONS):
        for rank in trace.rank_ids:
            try:
                a.compute(trace, rank)
            except NotApplicable as exc:
                assert exc.reason
