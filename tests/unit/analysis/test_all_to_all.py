"""All-to-all / expert-parallel imbalance on a hand-made 4-rank MoE run.

Per rank and step (two steps of 10 ms): a ``moe::dispatch`` range launching an all-to-all kernel
that sends 1750 tokens and receives tokens_in = 1000, 1000, 1000, 4000 (rank 3 hosts the hot
expert), an expert GEMM, then a ``moe::combine`` all-to-all sending the tokens back (sends
tokens_in, receives its 1750). A token is 512 bf16 values = 1024 bytes. Dispatch kernels take
200 µs (rank 3: 800), combine kernels 300 µs.

Hand-computed, per step: time = 500 µs (rank 3: 1100), median 500 → spread 2.2, slowest rank 3;
routed bytes received (dispatch only: combine returns the tokens) = 1000 · 1024 (rank 3: 4000 ·
1024), median 1000 · 1024 → spread 4.0, hottest rank 3; bytes received in all phases = (tokens_in
+ 1750) · 1024; bytes sent = (1750 + tokens_in) · 1024.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis.all_to_all import PHASES, all_to_all_record, combine_all_to_all, compute_all_to_all
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import ALL_TO_ALL
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder, kargs, load_ranks

US = 1000
TOKEN = 1024
STEP = 10_000
TOKENS_IN = (1000, 1000, 1000, 4000)
SENT = 1750
A2A = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"


def _a2a(b: TraceBuilder, phase: str, host: int, ts: int, dur: int, out_tokens: int, in_tokens: int) -> None:
    b.op(f"moe::{phase}", host, 10, cat="user_annotation")
    b.launch_kernel(A2A, launch_ts=host + 2, launch_dur=5, ts=ts, dur=dur, stream=20, **kargs({
        "Collective name": "all_to_allv", "In msg nelems": out_tokens * 512, "Out msg nelems": in_tokens * 512,
        "dtype": "BFloat16", "Group size": 4, "Process Group Name": "2", "Process Group Ranks": "[0, 1, 2, 3]"}))


def moe(tmp_path: Path, sizes: bool = True) -> Trace:
    builders = []
    for rank in range(4):
        b = TraceBuilder(rank=rank, world_size=4)
        t_in = TOKENS_IN[rank]
        for s in range(2):
            t = s * STEP
            b.step(s + 1, t, STEP)
            _a2a(b, "dispatch", t + 10, t + 1000, 800 if rank == 3 else 200, SENT if sizes else -1, t_in)
            b.launch_kernel("expert_gemm", launch_ts=t + 30, launch_dur=5, ts=t + 2000, dur=3000)
            _a2a(b, "combine", t + 40, t + 6000, 300, t_in if sizes else -1, SENT)
        builders.append(b)
    return load_ranks(builders, tmp_path)


def test_the_hot_expert_rank_receives_most_and_the_spreads_are_hand_computed(tmp_path: Path) -> None:
    a = compute_all_to_all(moe(tmp_path))
    r = a.ranks
    assert r.rank.tolist() == [0, 1, 2, 3]
    assert r.time_ns.tolist() == [500 * US] * 3 + [1100 * US]
    assert r.dispatch_ns.tolist() == [200 * US] * 3 + [800 * US] and r.combine_ns.tolist() == [300 * US] * 4
    assert r.count.tolist() == [2.0] * 4
    assert r.routed_in_bytes.tolist() == [t * TOKEN for t in TOKENS_IN]
    assert r.bytes_in.tolist() == [(t + SENT) * TOKEN for t in TOKENS_IN]
    assert r.bytes_out.tolist() == [(SENT + t) * TOKEN for t in TOKENS_IN]
    assert r.routed_in_vs_median.tolist() == [1.0, 1.0, 1.0, 4.0]
    assert r.time_vs_median.tolist() == pytest.approx([1.0, 1.0, 1.0, 2.2])
    assert a.time_spread == pytest.approx(2.2) and a.routed_in_spread == 4.0
    assert a.top_receivers == (3, 0, 1, 2)
    st = a.steps
    assert st.step.tolist() == [1, 2] and st.hottest_rank.tolist() == [3, 3] and st.slowest_rank.tolist() == [3, 3]
    assert st.routed_in_max_bytes.tolist() == [4000 * TOKEN] * 2
    assert st.routed_in_median_bytes.tolist() == [1000 * TOKEN] * 2
    assert st.routed_in_spread.tolist() == [4.0, 4.0] and st.time_spread.tolist() == pytest.approx([2.2, 2.2])


def test_records_phases_and_the_registry_entry(tmp_path: Path) -> None:
    trace = moe(tmp_path)
    rec = all_to_all_record(trace, 3)
    assert rec is not None and PHASES == ("all_to_all", "dispatch", "combine")
    assert rec.phase_ns.tolist() == [[0, 800 * US, 300 * US]] * 2
    assert rec.bytes_in.tolist() == [[0, 4000 * TOKEN, SENT * TOKEN]] * 2
    a = combine_all_to_all({r: all_to_all_record(trace, r) for r in (2, 0, 3, 1)})  # any order
    assert a.top_receivers == (3, 0, 1, 2)
    got = analyze(trace).cluster_result(ALL_TO_ALL)
    assert got is not None and np.array_equal(got.ranks.time_ns, a.ranks.time_ns)
    with pytest.raises(NotApplicable):
        combine_all_to_all({0: rec, 1: None})


def test_without_sizes_the_bytes_are_unknown_not_zero_spread(tmp_path: Path) -> None:
    """Kernels whose op records no size: the times still compare, the routed bytes are unknown."""
    a = compute_all_to_all(moe(tmp_path, sizes=False))
    assert a.time_spread == pytest.approx(2.2)
    assert np.isnan(a.routed_in_spread) and a.top_receivers == ()
    assert a.steps.hottest_rank.tolist() == [-1, -1]
