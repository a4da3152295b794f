"""Pipeline-parallel stages, bubbles and stage imbalance on a hand-made 4-stage GPipe run.

The schedule (µs; p = 4 stages, m = 4 micro-batches, forward F = 1000, backward B = 2000 per
micro-batch and stage; two steps of S = 22000, step 2 the same shifted by S):

* forward of micro-batch j on stage s: [(s + j)·F, (s + j + 1)·F];
* backward of j on stage s: [Tf + (p − 1 − s + j)·B, + B] with Tf = (p − 1 + m)·F = 7000;
* an optimizer kernel of 500 right after each stage's last backward, ending at 21500 − 2000·s;
* stage 1 also runs a planted 2000 GEMM [5000, 7000] in its idle gap (the imbalance);
* sends overlap the last 50 of the kernel that produced them; stage s > 0 receives micro-batch j's
  activation in a recv [(s + j − 1)·F, (s + j)·F] (recv 0 from the step's start: the warm-up wait),
  stage s < 3 the gradient j in a recv from the end of the previous one (recv 0 from the end of its
  last forward) to when stage s + 1's backward of j ends.

Hand-computed per stage s (per step): busy = m·(F + B) + 500 = 12500 (stage 1: 14500); bubble =
S − busy = 9500 (stage 1: 7500); warm-up = s·F; cool-down = S − (21500 − 2000·s) = 500 + 2000·s;
interior = the rest = 9000 − 3000·s (stage 1: 4000); recv wait = s·F + (Tf + (3 − s)·B − (s + m)·F)
for s < 3 = 9000, 5000 (the planted GEMM covers 2000 of it), 5000, and 3000 for stage 3.
Imbalance: 14500 / mean(12500, 14500, 12500, 12500) − 1 = 14500 / 13000 − 1; the critical bubble
is stage 1's 7500.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.pipeline import combine_pipeline, compute_pipeline, find_chains
from stepscope.analysis.pipeline_records import pipeline_record
from stepscope.analysis.registry import PIPELINE
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder, kargs, load_ranks

US = 1000
P, M, F, B, S = 4, 4, 1000, 2000, 22_000
TF = (P - 1 + M) * F
P2P = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"


class _Stage:
    """One stage's builder with a host clock for launches (each launch 1 µs after the previous one);
    ``peers`` (stage → rank) writes each p2p kernel's ``Dst Rank`` / ``Src Rank`` as PyTorch ≥ 2.4 does."""

    def __init__(self, b: TraceBuilder, t0: int, group: str, s: int, peers: list[int] | None = None,
                 coll: str | None = None) -> None:
        self.b, self.t0, self.group, self.host, self.s, self.peers = b, t0, group, t0 + 1, s, peers
        self.coll = coll  # the "Collective name" of every p2p kernel (default: send / recv)

    def kernel(self, name: str, ts: int, end: int, stream: int = 7, **args: object) -> None:
        self.host += 1
        self.b.launch_kernel(name, launch_ts=self.host, launch_dur=1, ts=self.t0 + ts, dur=end - ts, stream=stream,
                             **args)

    def p2p(self, kind: str, ts: int, end: int, forward: bool) -> None:
        args = {"Collective name": self.coll or kind, "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20,
                "dtype": "Float", "Group size": 4, "Process Group Name": "1", "Process Group Ranks": self.group}
        if self.peers is not None:  # forward: recv from s - 1, send to s + 1; backward the other way
            other = self.s + (1 if (kind == "send") == forward else -1)
            args["Dst Rank" if kind == "send" else "Src Rank"] = self.peers[other]
        self.kernel(P2P, ts, end, stream=20, **kargs(args))


def _schedule(st: _Stage, s: int) -> None:
    for j in range(M):  # per micro-batch
        st.kernel("fwd_gemm", (s + j) * F, (s + j + 1) * F)
        if s > 0:
            st.p2p("recv", (s + j - 1) * F if j else 0, (s + j) * F, True)
        if s < P - 1:
            st.p2p("send", (s + j + 1) * F - 50, (s + j + 1) * F, True)
    for j in range(M):
        start = TF + (P - 1 - s + j) * B
        st.kernel("bwd_gemm", start, start + B)
        if s < P - 1:
            st.p2p("recv", (s + M) * F if j == 0 else start - B, start, False)
        if s > 0:
            st.p2p("send", start + B - 50, start + B, False)
    last = TF + (P - 1 - s + M) * B
    st.kernel("optimizer_step", last, last + 500)
    if s == 1:
        st.kernel("planted_gemm", 5000, 7000)


def gpipe(tmp_path: Path, order: list[int] | None = None, group: str | None = None, peers: bool = False,
          coll: str | None = None) -> Trace:
    """The 4-stage run; stage s runs on rank ``order[s]`` (default: rank s), the group lists the ranks
    (``group``: another text); ``peers``: the p2p kernels name their other end."""
    order = order or list(range(P))
    text = group if group is not None else "[" + ", ".join(map(str, order)) + "]"
    builders = []
    for rank in range(P):
        s = order.index(rank)
        b = TraceBuilder(rank=rank, world_size=P)
        for step in range(2):
            b.step(step + 1, step * S, S)
            _schedule(_Stage(b, step * S, text, s, order if peers else None, coll), s)
        builders.append(b)
    return load_ranks(builders, tmp_path)


def test_the_gpipe_bubbles_are_the_hand_computed_ones(tmp_path: Path) -> None:
    p = compute_pipeline(gpipe(tmp_path))
    assert p.pipelines.ranks.tolist() == ["0,1,2,3"] and p.pipelines.order.tolist() == ["group"]
    st = p.stages
    assert st.stage.tolist() == [0, 1, 2, 3] and st.rank.tolist() == [0, 1, 2, 3]
    assert st.step_ns.tolist() == [S * US] * 4
    assert st.busy_ns.tolist() == [12_500 * US, 14_500 * US, 12_500 * US, 12_500 * US]
    assert st.other_ns.tolist() == [0] * 4
    assert st.bubble_ns.tolist() == [9500 * US, 7500 * US, 9500 * US, 9500 * US]
    assert st.warmup_ns.tolist() == [0, 1000 * US, 2000 * US, 3000 * US]
    assert st.cooldown_ns.tolist() == [500 * US, 2500 * US, 4500 * US, 6500 * US]
    assert st.interior_ns.tolist() == [9000 * US, 4000 * US, 3000 * US, 0]
    assert st.p2p_wait_ns.tolist() == [9000 * US, 5000 * US, 5000 * US, 3000 * US]
    assert st.p2p_per_step.tolist() == [8.0, 16.0, 16.0, 8.0]
    assert st.bubble_pct[0] == pytest.approx(100 * 9500 / 22_000)
    row = p.pipelines
    assert row.stage_count.tolist() == [4] and row.step_count.tolist() == [2]
    assert row.slowest_stage.tolist() == [1] and row.busy_max_ns.tolist() == [14_500 * US]
    assert row.busy_mean_ns.tolist() == [13_000 * US]
    assert row.imbalance_pct[0] == pytest.approx(100 * (14_500 / 13_000 - 1))
    assert row.critical_bubble_ns.tolist() == [7500 * US]
    assert row.critical_bubble_pct[0] == pytest.approx(100 * 7500 / 22_000)
    assert p.steps.step.tolist() == [1, 2] * 4
    assert p.steps.bubble_ns.tolist() == [9500 * US] * 2 + [7500 * US] * 2 + [9500 * US] * 4


def test_stages_follow_the_group_order_not_the_rank_ids(tmp_path: Path) -> None:
    """Stage s on rank order[s]; the pipeline group lists the ranks stage by stage."""
    p = compute_pipeline(gpipe(tmp_path, order=[2, 0, 3, 1]))
    assert p.pipelines.ranks.tolist() == ["2,0,3,1"]
    assert p.stages.rank.tolist() == [2, 0, 3, 1]
    assert p.stages.warmup_ns.tolist() == [0, 1000 * US, 2000 * US, 3000 * US]
    assert p.pipelines.slowest_stage.tolist() == [1]


def test_the_peers_each_p2p_kernel_names_order_the_stages(tmp_path: Path) -> None:
    """Stage s on rank order[s] in a group listed in rank order (the world group of a job with data
    parallelism too: its order is not the stages'); the kernels' Dst / Src Rank give the chain."""
    trace = gpipe(tmp_path, order=[2, 0, 3, 1], group="[0, 1, 2, 3]", peers=True)
    rec = pipeline_record(trace, 0)
    assert rec is not None and rec.peers == (2, 3)  # stage 1: from / to stages 0 and 2
    p = compute_pipeline(trace)
    assert p.pipelines.order.tolist() == ["peers"] and p.pipelines.ranks.tolist() == ["2,0,3,1"]
    assert p.stages.warmup_ns.tolist() == [0, 1000 * US, 2000 * US, 3000 * US]
    assert p.stages.bubble_ns.tolist() == [9500 * US, 7500 * US, 9500 * US, 9500 * US]


def test_batch_isend_irecv_kernels_are_point_to_point_by_their_name(tmp_path: Path) -> None:
    """batch_isend_irecv records its kernels as "coalesced" (no collective type): the SendRecv kernel
    name says point-to-point, and the bubbles are the same."""
    p = compute_pipeline(gpipe(tmp_path, coll="coalesced"))
    assert p.pipelines.ranks.tolist() == ["0,1,2,3"]
    assert p.stages.p2p_wait_ns.tolist() == [9000 * US, 5000 * US, 5000 * US, 3000 * US]


def test_without_groups_the_order_comes_from_the_first_work(tmp_path: Path) -> None:
    """No group named: stage k starts its first forward k·F after stage 0, so the timing gives the order."""
    p = compute_pipeline(gpipe(tmp_path, order=[3, 1, 0, 2], group=""))
    assert p.pipelines.order.tolist() == ["timing"] and p.pipelines.ranks.tolist() == ["3,1,0,2"]
    assert p.stages.bubble_ns.tolist() == [9500 * US, 7500 * US, 9500 * US, 9500 * US]


def test_pairs_chain_into_a_path_oriented_by_the_first_work(tmp_path: Path) -> None:
    trace = gpipe(tmp_path, order=[1, 3, 0, 2])
    recs = {r: pipeline_record(trace, r) for r in trace.rank_ids}
    pairs = {1: ("[1, 3]",), 3: ("[1, 3]", "[0, 3]"), 0: ("[0, 3]", "[0, 2]"), 2: ("[0, 2]",)}
    mine = {r: replace(rec, groups=pairs[r]) for r, rec in recs.items() if rec is not None}
    assert find_chains(mine) == [((1, 3, 0, 2), "pairs")]


def test_records_alone_give_the_answer_and_no_p2p_is_not_applicable(tmp_path: Path) -> None:
    trace = gpipe(tmp_path)
    records = {r: pipeline_record(trace, r) for r in (3, 1, 0, 2)}  # any order
    a, b = combine_pipeline(records), compute_pipeline(trace)
    assert a.stages.bubble_ns.tolist() == b.stages.bubble_ns.tolist()
    assert np.array_equal(a.steps.busy_ns, b.steps.busy_ns)
    with pytest.raises(NotApplicable):
        combine_pipeline({0: records[0], 1: None})
    bundle = analyze(trace)
    got = bundle.cluster_result(PIPELINE)
    assert got is not None and got.pipelines.critical_bubble_ns.tolist() == [7500 * US]


def test_the_advisor_claims_the_critical_bubble(tmp_path: Path) -> None:
    """pipeline-bubble: stage 1's 7.5 ms bubble (34 % of the step, 5 of it in recv kernels) is the gain."""
    from stepscope.advisor.config import AdvisorConfig
    from stepscope.advisor.engine import run_advisor
    from stepscope.report import texts

    bundle = analyze(gpipe(tmp_path))
    found = [f for f in run_advisor(bundle).findings if f.rule == "pipeline-bubble"]
    assert len(found) == 1
    f = found[0]
    assert f.rank is None and f.est_gain_ns == 7500 * US and f.change.params == {"stages": 4}
    ev = f.evidence
    assert (ev["slowest_stage"], ev["slowest_rank"], ev["pipeline_ranks"]) == (1, 1, [0, 1, 2, 3])
    assert (ev["warmup_ms"], ev["cooldown_ms"], ev["interior_ms"], ev["p2p_wait_ms"]) == (1.0, 2.5, 4.0, 5.0)
    assert ev["per_stage_bubble_ms"] == {"0": 9.5, "1": 7.5, "2": 9.5, "3": 9.5}
    assert texts.found_text(f).startswith("Stage 1 (rank 1), the busiest of 4 pipeline stages, is idle 7.50 ms")
    quiet = run_advisor(bundle, config=AdvisorConfig(pipeline_bubble_min_pct=35.0))  # 34.1 % < 35
    assert not [f for f in quiet.findings if f.rule == "pipeline-bubble"]
    waits = run_advisor(bundle, config=AdvisorConfig(pipeline_wait_min_share_pct=70.0))  # 5 / 7.5 = 67 % < 70
    assert not [f for f in waits.findings if f.rule == "pipeline-bubble"]
