"""The terminal views say what fits the trace: a native CUDA program without step markers
(CloverLeaf under Nsight Systems) reads "over the whole trace" and gets no PyTorch hints; a CPU-only
rank whose collectives run on the host (gloo) gets no GPU words and its communication shown."""

from __future__ import annotations

import io
import re
from functools import cache
from pathlib import Path

import pytest

from stepscope import load
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.common import step_windows, window_of
from stepscope.analysis.registry import CACHING_ALLOCATOR, REMEDIES
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.transforms import DropSyncs
from stepscope.model.trace import Trace
from stepscope.report import json_out, terminal, texts, whatif_view
from stepscope.report.advice_json import verdict_dicts
from stepscope.report.console import terminal_console
from stepscope.report.markdown import render_markdown
from tests.conftest import SHARED_TRACES

DATA = Path(__file__).resolve().parents[1] / "data"
CLOVER = "nsys_pipit/cloverleaf_cuda_a100"
#: what a trace without step markers never reads (its one window is no step, nor an average of steps)
PER_STEP = re.compile(r"per step|per average step|mean step|ms / step|steps/s|in the steps|\bstep -1\b|│ +-1 │")


@cache
def _trace(rel: str) -> Trace:
    return load(SHARED_TRACES / rel)


@cache
def _bundle(rel: str) -> Bundle:
    return analyze(_trace(rel))


def views_text(rel: str) -> str:
    out = io.StringIO()
    terminal.render(_bundle(rel), terminal_console(file=out, width=400))
    return out.getvalue()


def test_the_allocator_calls_are_those_in_the_window(shared_traces: Path) -> None:
    """The program's cudaMalloc of its whole problem, 240 ms before the 342 ms window, is set-up:
    counted it made "246.859 ms host time per step" of a window whose every call takes 0.9 ms."""
    trace = _trace(CLOVER)
    r = _bundle(CLOVER).rank(0).get(CACHING_ALLOCATOR)
    assert r is not None and r.step_count == 0
    ts = trace.events["ts_ns"][r.calls.rows]
    assert len(r.calls) == 73 and (window_of(step_windows(trace, 0), ts) >= 0).all()
    assert r.calls.total_ns / 1e6 < 1.0


def test_the_views_of_a_trace_without_steps_say_the_window(shared_traces: Path) -> None:
    text = views_text(CLOVER)
    assert not PER_STEP.findall(text), PER_STEP.findall(text)
    for said in ("synchronisation over the whole trace: 1591.0 blocking sync calls",
                 "pageable H2D / D2H copies in the window, over the whole trace: 279.0 copies, 9.391 ms",
                 "what-if, each remedy replayed (window 342.408 ms)", "│ window ", "342.408 ms (the whole trace)",
                 "(294.405 ms over the whole trace)", "the window's share is in the verdict"):
        assert said in text, said


def test_the_whatif_of_a_trace_without_steps_says_the_window(shared_traces: Path) -> None:
    out = io.StringIO()
    whatif_view.render(simulate(_trace(CLOVER), [DropSyncs()]), CLOVER, terminal_console(file=out, width=400))
    text = out.getvalue()
    assert not PER_STEP.findall(text), text
    assert "window 342.41 -> 307.70 ms (saves 34.71 ms)" in text and "│  all │" in text
    assert "the window (whole trace, no step markers), measured and predicted" in " ".join(text.split())


CPU_GLOO = "hta/cpu_only_gloo_rank34_of300"
#: PyTorch's profiler options, which a program without PyTorch cannot set
PYTORCH_HINTS = re.compile(r"torch\.profiler|record_shapes|profile_memory|with_stack|with_modules|record_function")
#: what a rank without a device is never told (tests/e2e/test_cpu_only_wording.py's, and Tensor-Core columns)
GPU_WORDS = re.compile(r"\bGPUs?\b|CUDA|pin_memory|Tensor Core|\bSMs?\b|\bTC\b|DALI|nvidia\.com|amd\.com")


def not_run_lines(rel: str) -> list[str]:
    return [texts.not_run_text(n.rule, n.reason) for n in run_advisor(_bundle(rel)).not_run]


def test_a_native_program_gets_no_pytorch_hints(shared_traces: Path) -> None:
    """CloverLeaf (CUDA, no PyTorch): "wrap code in torch.profiler.record_function(...)",
    "profile_memory=True", "record_shapes=True" were hints it cannot follow."""
    said = [views_text(CLOVER), *not_run_lines(CLOVER)]
    assert not [s for s in said if PYTORCH_HINTS.search(s)], [PYTORCH_HINTS.findall(s) for s in said]
    assert "mark code ranges with NVTX" in said[0]
    assert "a program without PyTorch records no operators" in said[0]


def test_a_rank_without_a_device_gets_no_gpu_rows(shared_traces: Path) -> None:
    """The CPU-only gloo rank: no GPU utilization / SM efficiency / Tensor-Core rows, no CUDA runtime,
    no device columns; its device views and rules say "no device", once."""
    said = [views_text(CPU_GLOO), *not_run_lines(CPU_GLOO)]
    assert not [s for s in said if GPU_WORDS.search(s)], [GPU_WORDS.findall(s) for s in said]
    assert said[0].count("no device on this rank (a CPU-only run)") == 1
    assert "under-filled-grid: not run: no device on this rank (a CPU-only run)" in said


def test_host_collectives_are_the_distributed_view(shared_traces: Path) -> None:
    """No communication kernel, yet 85 % of its step in gloo's all-reduce: the view says so with the
    step breakdown's number (it said "no communication kernels on this rank"); a CPU-only rank had no kernels
    to miss, so none are named."""
    text = views_text(CPU_GLOO)
    assert "no communication kernels" not in text
    assert ("distributed: the collectives run on the host (gloo, on the CPU); "
            "178.777 ms per step inside them, 85.1 % of the step") in text
    assert "│ 551     │ 210.109 │ 178.777 │" in text  # the breakdown's Comm, the same number
    doc = json_out.to_json(_bundle(CPU_GLOO), [])
    assert ("**Communication** (rank 34): the collectives run on the host (the CPU): "
            "178.8 ms per step inside them, 85 % of the step") in render_markdown(doc)


def test_a_job_of_host_collectives_shows_their_time_per_rank() -> None:
    """Two CPU ranks (gloo): the Markdown's ranks table has each one's time in the collectives, not
    empty GPU utilization and exposed / overlapped communication columns."""
    md = render_markdown(json_out.to_json(analyze(load(DATA / "cpu_ddp_2rank")), []))
    assert "| rank | avg step | in collectives (on the host) |" in md and "GPU util" not in md
    assert "| 0 (culprit) | 44.3 ms | 7.7 ms |" in md


def test_a_cpu_gloo_job_is_told_to_communicate_less(shared_traces: Path) -> None:
    """85 % of the step in gloo collectives on the CPU: the finding that shortens it comes first (it had
    none: the host-side communication rule read GPU ranks only), in the CPU's words."""
    adv = run_advisor(_bundle(CPU_GLOO))
    assert adv.verdicts[0].bound == "communication"
    first = adv.findings[0]
    assert first.rule == "comm-not-overlapped" and first.change is not None and first.change.key == "communicate-less"
    assert first.evidence["exposed_comm_pct"] == pytest.approx(adv.verdicts[0].shares_pct["communication"], abs=0.01)
    (v,) = verdict_dicts(adv.verdicts, adv.findings)
    assert "No finding" not in v["text"]
    assert not any(GPU_WORDS.search(t) for t in (v["text"], texts.advice_text(first), texts.basis_text(first)))


def test_the_verdict_says_that_no_finding_shortens_its_bound() -> None:
    """No finding at all: the verdict still says where to look, in the CPU's words."""
    from stepscope.advisor.verdict import Verdict
    v = Verdict(0, "communication", 10_000_000, {"communication": 85.0, "host": 15.0}, 3, has_device=False,
                platform="cpu")
    text = texts.unaddressed_text(v, any_findings=False)
    assert text == ("No finding shortens communication; to shorten it, see the distributed view (the time inside "
                    "the host's collectives, waiting for the other ranks included) and, on a job, who arrives late "
                    "at them.")
    assert not GPU_WORDS.search(text)


@pytest.mark.parametrize("rel", ["tracelens/h100_bert_small_inference", CLOVER])
def test_the_whatif_table_leaves_out_remedies_that_cannot_apply(shared_traces: Path, rel: str) -> None:
    """Inference (no DataLoader call, no optimizer step) and a native program: their loader-workers
    and fused-optimizer rows were all 0.000; they are named as having nothing to change instead."""
    r = _bundle(rel).rank(0).get(REMEDIES)
    assert r is not None
    applies = dict(zip(r.name, r.applies))
    assert not applies["loader-workers"] and not applies["fused-optimizer"] and applies["graph-capture"]
    out = io.StringIO()
    terminal.render(_bundle(rel), terminal_console(file=out, width=400), views=["remedies"])
    text = out.getvalue()
    assert "│ loader-workers" not in text and "│ fused-optimizer" not in text and "│ graph-capture" in text
    (left,) = [ln for ln in text.splitlines() if "left out, nothing in this trace for them to change:" in ln]
    assert "loader-workers" in left and "fused-optimizer" in left and "graph-capture" not in left


ASCEND = ("ascend_msinsight/small_cnn_2rank_hccl_level1/text", "ascend_msinsight/small_cnn_2rank_hccl_level1/db")
#: an NPU's views never read an NVIDIA GPU's parts (its AI cores' Cube runs every matrix op: no Tensor-Core split)
NVIDIA_WORDS = re.compile(r"\bGPUs?\b|CUDA|Tensor[- ]Cores?|\bSMs?\b|cuDNN")


@pytest.mark.parametrize("rel", ASCEND)
def test_an_npu_is_said_as_an_npu_in_every_view(shared_traces: Path, rel: str) -> None:
    """The Ascend job's terminal views and the rules that did not run: "NPU streams", "NPU idle time",
    no "kernel time on Tensor Cores" row (it read 0 % — every Cube-unit matmul counted as not on one),
    no "SM count" (an AI core's)."""
    if not (SHARED_TRACES / rel).exists():
        pytest.skip(f"{rel} is not among the shared traces")
    views = views_text(rel)
    advice = run_advisor(_bundle(rel))
    not_run = [texts.not_run_text(n.rule, n.reason, advice.verdicts[0].platform) for n in advice.not_run]
    md = render_markdown(json_out.to_json(_bundle(rel), []))
    said = [views, *not_run, md]
    assert not [s for s in said if NVIDIA_WORDS.search(s)], sorted({w for s in said for w in NVIDIA_WORDS.findall(s)})
    assert "NPU streams" in views and "NPU idle" in views and "| NPU util |" in md
    assert "an Ascend NPU runs matrix ops on its AI cores' Cube unit" in views
