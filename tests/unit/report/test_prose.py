"""Advice text never shows a Python value or an empty placeholder (issue 14): "(here  )",
"(None SMs)", "['[[1,141,512],…]", "(['kernel_count', 'compute_ns'])"."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from stepscope.advisor.config import AdvisorConfig
from stepscope.advisor.engine import run_advisor
from stepscope.advisor.finding import Change, Finding, Severity
from stepscope.analysis.bundle import analyze
from stepscope.report import texts
from stepscope.report._prose import fill, prose
from tests.builders import TraceBuilder, load_ranks
from tests.unit.advisor.scenes import SCENES, rank_builder

#: a Python value or an empty slot in prose (a call like ``no_sync()`` is code, not a slot)
PYTHONISH = re.compile(r"\bNone\b|\[|\]|(?<![\w.])\(\s*\)|\(here\s+\)|\(\s*,|,\s*\)|\bnan\b|\{\}")
SYNC = "Remove syncs⟨ (here {call}⟨ under {op}⟩⟨ from {call_site}⟩)⟩: no .item()"


def test_optional_parts_drop_when_a_field_has_no_value() -> None:
    assert fill(SYNC, {"call": "cudaMemcpy", "op": "", "call_site": None}) == \
        "Remove syncs (here cudaMemcpy): no .item()"
    assert fill(SYNC, {"call": "", "op": "aten::copy_", "call_site": ""}) == "Remove syncs: no .item()"
    assert fill(SYNC, {"call": "cudaStreamSynchronize", "op": "aten::copy_", "call_site": "a.py(4): <module>"}) == \
        "Remove syncs (here cudaStreamSynchronize under aten::copy_ from a.py(4): <module>): no .item()"
    assert fill("than the⟨ {sm_count}⟩ SMs", {"sm_count": None}) == "than the SMs"
    assert fill("than the⟨ {sm_count}⟩ SMs", {"sm_count": 80}) == "than the 80 SMs"


def test_values_read_as_prose() -> None:
    assert prose(["[[1,141,512],[30522,512],[30522]]", "[[30522],[]]"]) == \
        "(1×141×512, 30522×512, 30522); (30522, scalar)"
    assert prose(["fragmentation", "allocator-churn"]) == "fragmentation, allocator-churn"
    assert prose([5, 6, 7]) == "5, 6, 7"
    assert prose(None) is None and prose("") is None and prose([]) is None and prose(math.nan) is None
    assert fill("{x:.1f} and {y:.1f} of {z}", {"x": 2.25, "y": "many"}) == "2.2 and many of ?"
    assert fill("{bad", {}) == "{bad"  # a malformed template is shown, never raised


def _finding(rule: str, evidence: dict[str, object], change: Change) -> Finding:
    return Finding(rule, Severity.LOW, 0, (), 1_000_000, 10_000_000, "not-estimated", evidence, change)


def test_sync_advice_names_the_call_and_never_leaves_the_placeholder_empty() -> None:
    f = _finding("sync-in-step", {"sync_ms": 1.0, "sync_pct": 10.0, "sync_calls_per_step": 2,
                                  "d2h_copies_per_step": 0}, Change("remove-step-sync", {"call": "", "op": "",
                                                                                          "call_site": ""}))
    assert "(here" not in texts.advice_text(f)
    g = _finding("sync-in-step", f.evidence, Change("remove-step-sync", {"call": "cudaDeviceSynchronize", "op": "",
                                                                         "call_site": ""}))
    assert "Remove per-step host syncs (here cudaDeviceSynchronize):" in texts.advice_text(g)


def test_straggler_text_names_the_culprit_its_causes_and_victims() -> None:
    """Causes in words, largest first, the ones under 5 µs left out; victims as a rank range."""
    f = Finding("straggler-rank", Severity.MEDIUM, 7, (), 1_300_000, 18_700_000, "culprit-lateness",
                {"slow_rank": 7, "cause": "host", "times_last": 4, "collectives": 8, "late_ms": 1.3,
                 "in_trace_late_ms": 0.817, "cause_ms": {"late_start": 0.483, "host": 0.685, "copy": 0.001},
                 "victims": [0, 1, 2, 3, 4, 5, 6], "victim_wait_ms": {"0": 1.3}, "job_step_ms": 18.7},
                Change("fix-slow-rank", {"rank": 7, "cause": "host"}))
    text = texts.advice_text(f)
    assert ("Rank 7 arrives last at 4 of 8 collectives, 1.30 ms per step after the next rank (0.82 ms of it "
            "explained in the trace); what delays it: its host (CPU ops, launches) 0.69 ms, it started the step "
            "late (before the trace) 0.48 ms. Ranks 0-6 wait for it.") in text
    assert "copies" not in text and "(its host (CPU ops, launches))" in text
    assert not PYTHONISH.search(text), text
    assert "slowest rank's step shrinks" not in texts.basis_text(replace(f, ranks=(7, 5)))


def _all_texts(findings: list[Finding]) -> list[str]:
    return [t for f in findings for t in (texts.title_text(f), texts.advice_text(f), texts.basis_text(f))]


@pytest.mark.parametrize("rule", sorted(SCENES))
def test_every_rule_reads_as_prose(tmp_path: Path, rule: str) -> None:
    b = TraceBuilder()
    SCENES[rule](b, True)
    findings = list(run_advisor(analyze(b.load(tmp_path))).findings)
    assert findings
    for text in _all_texts(findings):
        assert not PYTHONISH.search(text), text


def test_cluster_rules_read_as_prose(tmp_path: Path) -> None:
    """Rank 3's unequal work, as the straggler finding (by default) and as load-imbalance (its straggler not
    claimed: ``straggler_min_pct`` 100; one finding for one cause)."""
    bundle = analyze(load_ranks([rank_builder(r, 6_000 if r == 3 else 2_000) for r in range(4)], tmp_path))
    unclaimed = AdvisorConfig(straggler_min_pct=100)
    findings = list(run_advisor(bundle).findings) + list(run_advisor(bundle, unclaimed).findings)
    assert {"straggler-rank", "load-imbalance"} <= {f.rule for f in findings}
    for text in _all_texts(findings):
        assert not PYTHONISH.search(text), text


def test_the_terminal_header_names_a_device_without_an_sm_count(tmp_path: Path) -> None:
    """An NPU has no SMs: the header said "Ascend NPU (None SMs)"."""
    import io

    from rich.console import Console

    from stepscope.report.terminal import render_header

    b = TraceBuilder()
    b.meta["deviceProperties"] = [{"id": 0, "name": "Ascend910B", "totalGlobalMem": 64 << 30}]
    b.launch_kernel("k", launch_ts=0, launch_dur=2, ts=5, dur=10)
    out = io.StringIO()
    render_header(analyze(b.load(tmp_path)), Console(file=out, width=200))
    text = out.getvalue()
    assert "Ascend910B" in text and "None" not in text and "SMs" not in text


def test_whole_floats_read_as_counts() -> None:
    assert fill("{n} sync calls and {m} copies per step, {x} ms", {"n": 1591.0, "m": 2.0, "x": 0.25}) == \
        "1591 sync calls and 2 copies per step, 0.25 ms"
    assert fill("{n:.1f} ms", {"n": 3.0}) == "3.0 ms"  # an explicit format is kept


def test_a_native_program_gets_no_pytorch_pages() -> None:
    from stepscope.report.texts import links
    assert any("pytorch.org" in link for link in links("sync-in-step", "cuda"))
    native = links("sync-in-step", "cuda+native")
    assert native and not any("pytorch.org" in link for link in native)


def test_cluster_rules_list_matches_the_rules_scope() -> None:
    from stepscope.advisor.rules import ALL_RULES

    assert {r.RULE_ID for r in ALL_RULES if r.SCOPE == "cluster"} == texts.CLUSTER_RULES


def test_the_findings_title_says_how_they_are_ordered() -> None:
    """nw4: no-tensor-cores (14 ms, addresses the compute bound) above launch-bound (30 ms): the
    title must not say "largest estimated gain first"."""
    from stepscope.report.findings_view import _findings_title

    change = Change("x", {})
    small, large = (replace(_finding("r", {}, change), est_gain_ns=g) for g in (14_000_000, 30_000_000))
    assert _findings_title(2, [large, small]) == "advisor findings (2; largest estimated gain first)"
    assert _findings_title(2, [small, large]) == \
        "advisor findings (2; what shortens the bound first, then by gain)"


def test_a_cpu_only_rank_is_bound_by_the_cpu_not_by_launches() -> None:
    """CPU-only training (tests/data/cpu_pairs): its host share is the model's ops, not launch calls."""
    from stepscope.advisor.verdict import Verdict

    shares = {"host": 69.0, "input": 31.0}
    cpu = Verdict(0, "host", 19_200_000, shares, 6, has_device=False, platform="cpu")
    gpu = Verdict(0, "host", 19_200_000, shares, 6, device_busy_pct=20.0, has_device=True)
    assert texts.verdict_text(cpu) == "rank 0: bound by the model's CPU work (69% of the 19.2 ms " \
                                      "step) — the input pipeline 31%"
    assert texts.verdict_text(gpu).startswith("rank 0: bound by the host (CPU work, launches) (69%")


def test_a_job_replay_that_saves_nothing_says_so() -> None:
    """DLRM's dataloader-bound on ranks that wait anyway: the job replay reads 18.71 -> 18.74 ms and
    the gain is 0; the basis says there is no saving instead of leaving a longer step unexplained."""
    f = Finding("dataloader-bound", Severity.LOW, 6, (), 0, 18_710_000, "replayed",
                {"whatif_basis": "4 DataLoader workers", "whatif_measured_ms": 13.09, "whatif_predicted_ms": 11.79,
                 "whatif_job_measured_ms": 18.71, "whatif_job_predicted_ms": 18.74},
                Change("set-num-workers", {"num_workers": 4}), ranks=(0, 6))
    assert texts.basis_text(f).endswith("from 18.71 to 18.74 ms — no saving for the job")
    g = replace(f, evidence={**f.evidence, "whatif_job_predicted_ms": 17.5})
    assert texts.basis_text(g).endswith("from 18.71 to 17.50 ms")


def test_launch_bound_on_the_host_path_does_not_claim_the_device_waited() -> None:
    """Without launch links (Ascend's trace_view) launch-bound is read as the host's time on the
    critical path: it must not say the NPU sat idle waiting for the host (its idle-time table says 0)."""
    ev = {"host_wait_ms": 43.5, "host_wait_pct": 28.3}
    f = Finding("launch-bound", Severity.HIGH, 1, (), 40_000_000, 154_000_000, "host-on-path", ev,
                Change("reduce-host-work", {}), platform="ascend")
    assert texts.title_text(f) == "The host's work holds up the step"
    assert texts.found_text(f).startswith("The host's own work is on the step's critical path 43.5 ms per step")
    assert "idle waiting" not in texts.found_text(f)
    g = replace(f, basis="host-wait-idle")
    assert texts.found_text(g).startswith("The NPU sits idle waiting for the host 43.5 ms per step")
