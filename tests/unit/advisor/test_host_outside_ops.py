"""``host-outside-ops`` and the verdict's words for a CPU-only step whose time no op covers.

Micro traces (µs) with hand-computed answers: three 10 ms steps on one CPU thread, ops covering a
known part of each step and the rest either one block (loop code: a checkpoint, ``gc.collect()``),
one block in which the profile recorded big frees, or many short gaps (the model's Python per op).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.advisor.verdict import verdict_of
from stepscope.analysis.bundle import analyze
from stepscope.analysis.critical_path import HOST_PARTS, compute_critical_path
from stepscope.analysis.whatif.loop_code import MoveLoopCode
from stepscope.analysis.whatif.simulate import simulate
from stepscope.report.texts import verdict_text
from tests.builders import TraceBuilder

STEP = 10_000


def block_trace(tmp_path: Path, ops_us: int, frees_mb: int = 0) -> TraceBuilder:
    """Each step: ops for ``ops_us`` from its start, then nothing traced to its end; ``frees_mb`` MB
    of host memory freed 100 µs into that untraced block (a ``profile_memory=True`` free)."""
    b = TraceBuilder(device=None)
    for i in range(3):
        t = i * STEP
        b.step(i + 1, t, STEP)
        b.op("aten::mm", ts=t + 10, dur=ops_us - 10)
        if frees_mb:
            b.memory(t + ops_us + 100, -frees_mb << 20, 0, 0, device_type=0)
    return b


def gaps_trace(op_us: int = 60) -> TraceBuilder:
    """Each step: 100 ops of ``op_us`` µs, one every 100 µs (the rest of each 100 µs between ops)."""
    b = TraceBuilder(device=None)
    for i in range(3):
        t = i * STEP
        b.step(i + 1, t, STEP)
        for k in range(100):
            b.op("aten::mul", ts=t + 100 * k + 100 - op_us, dur=op_us)
    return b


def finding(trace_builder: TraceBuilder, tmp_path: Path):  # type: ignore[no-untyped-def]
    adv = run_advisor(analyze(trace_builder.load(tmp_path)))
    return next((f for f in adv.findings if f.rule == "host-outside-ops"), None), adv


def test_the_untraced_block_is_on_the_path_and_its_frees_are_counted(tmp_path: Path) -> None:
    trace = block_trace(tmp_path, 2_000, frees_mb=256).load(tmp_path)
    cp = compute_critical_path(trace, 0)
    untraced = cp.host_parts_ns[:, HOST_PARTS.index("untraced")]
    assert untraced.tolist() == [8_010_000] * 3  # the first 10 µs of each step and its last 8 ms
    assert cp.untraced_longest_ns.tolist() == [8_000_000] * 3
    assert cp.untraced_freed_bytes.tolist() == [256 << 20] * 3


def test_loop_code_in_one_block_is_a_finding_whose_gain_is_replayed(tmp_path: Path) -> None:
    f, adv = finding(block_trace(tmp_path, 2_000), tmp_path)
    assert f is not None and f.change is not None and f.change.key == "move-loop-code"
    assert f.basis == "replayed"
    assert f.est_gain_ns == pytest.approx(8_010_000, rel=1e-6)  # the step keeps its ops' 1.99 ms
    assert f.evidence["untraced_pct"] == pytest.approx(80.1)
    assert adv.findings[0].rule == "host-outside-ops"


def test_the_verdict_names_the_time_no_op_covers(tmp_path: Path) -> None:
    bundle = analyze(block_trace(tmp_path, 2_000).load(tmp_path))
    v = verdict_of(bundle, 0)
    assert v is not None and v.bound == "host" and v.untraced_pct == pytest.approx(80.1)
    assert "outside every recorded op" in verdict_text(v)
    assert "model's CPU work" not in verdict_text(v).split(" — ")[0]
    assert v.to_dict()["untraced_pct"] == pytest.approx(80.1)


def test_a_step_of_ops_is_the_models_cpu_work_and_no_finding(tmp_path: Path) -> None:
    f, adv = finding(block_trace(tmp_path, 9_500), tmp_path)  # 5 % outside ops
    assert f is None
    v = adv.verdicts[0]
    assert "the model's CPU work" in verdict_text(v) and v.untraced_pct < 10


def test_frees_in_the_block_call_for_reused_buffers(tmp_path: Path) -> None:
    f, _ = finding(block_trace(tmp_path, 2_000, frees_mb=256), tmp_path)
    assert f is not None and f.change is not None and f.change.key == "reuse-buffers"
    assert f.change.params["freed_mb"] == 268  # 256 MiB in MB
    assert f.evidence["freed_outside_ops_mb"] == pytest.approx(268.4)


def test_many_short_gaps_call_for_fewer_ops_not_moving_code(tmp_path: Path) -> None:
    f, adv = finding(gaps_trace(), tmp_path)
    assert f is not None and f.change is not None and f.change.key == "fewer-ops"
    assert f.evidence["untraced_pct"] == pytest.approx(40.0, abs=0.1)
    assert "the model's CPU work" in verdict_text(adv.verdicts[0])  # 40 % of 100 %: not the most of it


def test_the_transform_removes_only_the_untraced_time(tmp_path: Path) -> None:
    trace = block_trace(tmp_path, 2_000).load(tmp_path)
    sim = simulate(trace, [MoveLoopCode()])
    r = sim.ranks[0]
    assert r.predicted_ns.tolist() == [1_990_000] * 3  # the op's 1.99 ms stays


def test_a_device_rank_leaves_it_to_launch_bound(tmp_path: Path) -> None:
    b = TraceBuilder()  # with a device: the GPU waits for the same time, launch-bound's
    for i in range(3):
        t = i * STEP
        b.step(i + 1, t, STEP)
        b.op("aten::mm", ts=t + 10, dur=1_000)
        b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=t + 20, launch_dur=10, ts=t + 40, dur=900)
    f, _ = finding(b, tmp_path)
    assert f is None


def test_most_of_the_step_in_short_gaps_is_worded_as_per_op_python(tmp_path: Path) -> None:
    """100 ops of 30 µs a 10 ms step, 70 µs apart: 70 % of the step between ops, no gap over 70 µs — the
    model's own Python per op, not a block of loop code; the finding says fewer ops."""
    f, adv = finding(gaps_trace(op_us=30), tmp_path)
    v = adv.verdicts[0]
    assert v.untraced_in_gaps and v.untraced_pct == pytest.approx(70.0, abs=0.1)
    assert "the host's Python between its ops (many short gaps" in verdict_text(v)
    assert f is not None and f.change is not None and f.change.key == "fewer-ops"


def few_blocks_trace() -> TraceBuilder:
    """Each step: ``aten::mm`` 0-1000; three blocks of loop code, 1000-3000, 3500-5000 and 5500-7000 µs (2000 +
    1500 + 1500), separated by two ops (3000-3500, 5000-5500); then 30 ops of 60 µs one every 100 µs from
    7040 to the step's end (the third block runs to 7040; 29 gaps of 40 µs between them: 1160 µs) — untraced
    10000 − 3800 traced = 6200, of it 1160 in stretches under 0.5 ms: 19 %. The longest stretch (2000) is
    under half of it, which had read as "many short gaps"."""
    b = TraceBuilder(device=None)
    for i in range(3):
        t = i * STEP
        b.step(i + 1, t, STEP)
        b.op("aten::mm", ts=t, dur=1_000)
        b.op("aten::add", ts=t + 3_000, dur=500)
        b.op("aten::add", ts=t + 5_000, dur=500)
        for k in range(30):
            b.op("aten::mul", ts=t + 7_040 + 100 * k, dur=60)
    return b


def test_a_few_blocks_of_loop_code_are_not_short_gaps(tmp_path: Path) -> None:
    trace = few_blocks_trace().load(tmp_path)
    cp = compute_critical_path(trace, 0)
    assert cp.host_parts_ns[:, HOST_PARTS.index("untraced")].tolist() == [6_200_000] * 3
    assert cp.untraced_longest_ns.tolist() == [2_000_000] * 3
    assert cp.untraced_short_ns.tolist() == [1_160_000] * 3
    assert not cp.untraced_in_gaps()
    (tmp_path / "advise").mkdir()
    f, _ = finding(few_blocks_trace(), tmp_path / "advise")
    assert f is not None and f.change is not None and f.change.key == "move-loop-code"
