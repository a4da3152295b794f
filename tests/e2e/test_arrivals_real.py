"""Culprits and victims on the real multi-rank traces (docs/analyses/arrivals.md says what the data shows).

PARAM DLRM, 8 V100 ranks, one ProfilerStep#10 with 8 NCCL kernels per rank. Measured independently
of the analysis (each rank's NCCL kernels in start order, read from the trace's kernel names): every
collective's kernels end within ~10 µs on all ranks; the kernels of collective 0 start (ms from the
earliest) r0 5.49, r1 0.00, r2 7.12, r3 1.50, r4 2.75, r5 2.96, r6 7.12, r7 7.62; rank 7 starts last
at collectives 0-3, ranks 4 / 5 at 5-7; ranks 1 and 3 are never last.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import stepscope
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import Bundle, analyze
from stepscope.analysis.registry import ARRIVALS, SLOW_LINKS
from stepscope.model.schema import EventKind
from stepscope.report.json_out import to_json
from stepscope.report.terminal import render

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"real traces not found at {TRACES}")
DLRM = "param_dlrm/dlrm_8rank_v100"
ASCEND = "ascend_msinsight/small_cnn_2rank_hccl_level1/text"
_BUNDLES: dict[str, Bundle] = {}


def bundle(rel: str) -> Bundle:
    if rel not in _BUNDLES:
        _BUNDLES[rel] = analyze(stepscope.load(TRACES / rel, use_cache=False))
    return _BUNDLES[rel]


def _nccl_starts_ms(b: Bundle) -> np.ndarray:
    """(8 ranks, 8 collectives): each rank's kernels named nccl*, in start order, ms from the earliest."""
    ev, pool = b.trace.events, b.trace.strings
    nccl = (ev["kind"] == EventKind.KERNEL) & pool.mask(lambda s: s.startswith("ncclKernel"))[ev["name"]]
    starts = np.stack([np.sort(ev["ts_ns"][nccl & (ev["rank"] == r)]) for r in range(8)])
    return (starts - starts.min()) / 1e6


def test_dlrm_arrivals_match_the_kernels_and_rank_7_arrives_last() -> None:
    b = bundle(DLRM)
    a = b.require_cluster(ARRIVALS)
    assert a.ranks == list(range(8)) and a.collective_count == 8
    starts = _nccl_starts_ms(b)
    assert starts[:, 0] == pytest.approx([5.49, 0.00, 7.12, 1.50, 2.75, 2.96, 7.12, 7.62], abs=0.01)
    t0 = a.m.arrival_ns.min()
    assert np.abs((a.m.arrival_ns - t0).T / 1e6 - starts).max() < 0.002  # the clock offsets are ≤ 1 µs
    assert np.ptp(a.m.end_ns, axis=1).max() < 10_000  # every collective ends within 10 µs on all ranks
    assert a.last_rank.tolist()[:4] == [7, 7, 7, 7] and set(a.last_rank.tolist()[5:]) <= {4, 5}
    assert a.times_last[[1, 3]].tolist() == [0, 0]
    # lateness of collective 0: rank 7 (7.62) after the next, ranks 2 and 6 (7.12)
    first = np.sort(starts[:, 0])
    assert a.lateness_ns[0] / 1e6 == pytest.approx(first[-1] - first[-2], abs=0.003)


def test_dlrm_rank_7_is_the_culprit_ranks_1_and_3_are_victims() -> None:
    a = bundle(DLRM).require_cluster(ARRIVALS)
    assert a.culprits == (7,) and a.culprit_cause == {7: "host"}
    assert set(a.victims) == {0, 1, 2, 3, 4, 5, 6}
    late = a.late_ns[7] / 1e6
    assert late == pytest.approx(0.505 + 0.509 + 0.162 + 0.124, abs=0.005)  # collectives 0-3
    assert a.rank_cause_ns[7, 0] / 1e6 == pytest.approx(0.48, abs=0.01)  # started step 10 last: late start
    assert a.in_trace_late_ns(7) / 1e6 == pytest.approx(late - 0.48, abs=0.01)
    # ranks 1 and 3 wait longest because they arrive first; rank 7 alone causes 1.30 ms of it
    assert set(np.argsort(-a.wait_total_ns)[:2].tolist()) == {1, 3} and int(np.argmin(a.wait_total_ns)) == 7
    assert a.wait_total_ns[[1, 3]] / 1e6 == pytest.approx([11.12, 9.56], abs=0.02)
    assert a.wait_on_culprits_ns[1] == a.wait_on_culprits_ns[3] == a.late_ns[7]
    # the wait is the NCCL kernel time spent before the last rank arrived: what remains is the same transfer
    ev, pool = bundle(DLRM).trace.events, bundle(DLRM).trace.strings
    nccl = (ev["kind"] == EventKind.KERNEL) & pool.mask(lambda s: s.startswith("ncclKernel"))[ev["name"]]
    comm = np.array([ev["dur_ns"][nccl & (ev["rank"] == r)].sum() for r in range(8)])  # per rank
    transfer = comm - a.wait_total_ns
    assert np.ptp(transfer) < 60_000


def doc_job(b: Bundle) -> list[float]:
    """The JSON's job what-if: [culprit, measured mean ms, predicted mean ms] of the one culprit."""
    j = to_json(b)["cluster"]["job_whatif"]
    assert len(j["fixes"]) == 1
    return [j["fixes"][0]["rank"], j["measured_mean_ms"], j["fixes"][0]["predicted_mean_ms"]]


def test_dlrm_advice_names_rank_7_not_ranks_1_and_3() -> None:
    b = bundle(DLRM)
    adv = run_advisor(b)
    found = [f for f in adv.findings if f.rule == "straggler-rank"]
    assert [f.rank for f in found] == [7]
    assert found[0].evidence["late_ms"] == pytest.approx(1.30, abs=0.01) and found[0].evidence["cause"] == "host"
    # the job replayed with rank 7 fixed saves collective 1's lateness only (docs/analyses/job_whatif.md)
    assert found[0].basis == "replayed" and found[0].est_gain_ms == pytest.approx(0.509, abs=0.01)
    assert doc_job(b) == pytest.approx([7, 18.711, 18.202], abs=0.002)
    # 1.30 of 18.7 ms: no imbalance (the slowest rank's path is communication 47 %, host 44 %)
    assert adv.verdicts[0].rank is None and adv.verdicts[0].bound != "imbalance"
    assert "load-imbalance" not in {f.rule for f in adv.findings}
    doc = to_json(b)
    arr = doc["cluster"]["arrivals"]
    assert [c["rank"] for c in arr["culprits"]] == [7] and arr["culprits"][0]["cause"] == "host"
    assert {r["rank"]: r["role"] for r in arr["ranks"]}[1] == "victim"
    assert doc["cluster"]["slow_links"]["slow"] == []  # one group: nothing to compare with
    assert b.require_cluster(SLOW_LINKS).rows.slow.sum() == 0


def test_dlrm_terminal_views_fit_80_columns() -> None:
    out = io.StringIO()
    render(bundle(DLRM), Console(file=out, width=80, force_terminal=False), views=["arrivals", "slow_links"])
    text = out.getvalue()
    assert "culprit rank 7: its host (CPU ops, launches); last at 4 of 8" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 80


def test_ascend_rank_1_late_once_is_not_claimed() -> None:
    b = bundle(ASCEND)
    a = b.require_cluster(ARRIVALS)
    assert a.collective_count == 4 and a.last_rank.tolist() == [1, -1, -1, -1]
    assert a.late_ns[1] / 1e6 == pytest.approx(5.62, abs=0.01)
    adv = run_advisor(b)
    assert "straggler-rank" not in {f.rule for f in adv.findings}  # last at one collective only
    assert adv.verdicts[0].bound == "communication"


def test_dlrm_job_verdict_says_the_jobs_step_the_findings_speak_of() -> None:
    """One job step: the verdict set by rank 7 said 'the 12.5 ms step' (rank 7's own window) while
    the straggler finding and the what-if said the job's 18.71 ms. Now the verdict names both, each
    for what it is, and the job's step is the same number everywhere."""
    from stepscope.report.texts import verdict_text

    advice = run_advisor(bundle(DLRM))
    job = advice.verdicts[0]
    assert job.rank is None and job.set_by == "waited-for" and job.ranks == (7,)
    (straggler,) = [f for f in advice.findings if f.rule == "straggler-rank"]
    assert job.job_step_ns is not None
    assert round(job.job_step_ns / 1e6, 3) == straggler.evidence["job_step_ms"] == 18.711
    text = verdict_text(job)
    assert "(the 18.7 ms step), set by rank 7" in text and "of its own 12.5 ms step" in text
    # the JSON verdict's step is the job's too (it said rank 7's 12.509 ms): the arrivals' and the job
    # replay's; rank 7's own window, which the shares are of, is a field of its own
    doc = to_json(bundle(DLRM))
    v = doc["verdicts"][0]
    assert v["avg_step_ms"] == v["job_step_ms"] == doc["cluster"]["arrivals"]["job_step_ms"] == pytest.approx(18.711)
    assert v["avg_step_ms"] == pytest.approx(doc["cluster"]["job_whatif"]["measured_mean_ms"], abs=1e-6)
    assert (v["shares_rank"], round(v["shares_step_ms"], 3)) == (7, 12.509)
    assert v["shares_pct"] == next(r for r in doc["verdicts"] if r["rank"] == 7)["shares_pct"]


def test_ascend_job_verdict_says_the_jobs_step() -> None:
    """Set by rank 1 (the rank the others wait for): its own window is 153.888 ms, the job's step 155.986."""
    b = bundle(ASCEND)
    doc = to_json(b)
    v = doc["verdicts"][0]
    assert v["set_by"] == "waited-for" and v["ranks"] == [1]
    assert v["avg_step_ms"] == v["job_step_ms"] == pytest.approx(155.986, abs=1e-3)
    # the text export links no device work to its launch: no job replay there; the arrivals' job step is the one
    assert doc["cluster"]["job_whatif"] is None
    assert v["avg_step_ms"] == pytest.approx(doc["cluster"]["arrivals"]["job_step_ms"], abs=1e-6)
    assert (v["shares_rank"], round(v["shares_step_ms"], 3)) == (1, 153.888)
    assert "(the 156.0 ms step), set by rank 1" in v["text"] and "of its own 153.9 ms step" in v["text"]
