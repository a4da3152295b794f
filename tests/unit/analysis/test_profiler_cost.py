"""The step without the profiler's own cost (analysis.profiler_cost, whatif.unprofiled), on a hand-made
trace whose host is the bound only because of its many small recorded ops.

Each 10.1 ms step: 100 groups of 10 µs apart... per group (100 µs of host): nine ``aten::view`` of 9 µs
and an ``aten::relu`` that launches a 60 µs kernel (a 5 µs launch call). The GPU waits 40 µs a group for
the host: host-bound. At 8 µs per recorded op (11 ops start in a group's host segment with the step's
marker in the first) the host's 95 µs between two launches become 15 µs, the launch keeps its 5: 20 µs
a group against the kernel's 60 — the GPU bounds the step, 100 kernels of 60 µs back to back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.profiler_cost import compute_profiler_cost
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.unprofiled import WithoutProfiler
from stepscope.model.trace import Trace
from stepscope.report import texts
from tests.builders import V100, TraceBuilder

H100 = {**V100, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "numSms": 132}
STEP_US = 10_100


def host_of_small_ops(tmp_path: Path, steps: int = 3) -> Trace:
    return small_ops(steps).load(tmp_path)


def small_ops(steps: int = 3) -> TraceBuilder:
    b = TraceBuilder(device=H100)
    for s in range(steps):
        t0 = s * STEP_US
        b.step(s + 1, t0, STEP_US)
        for g in range(100):
            base = t0 + g * 100
            for i in range(9):
                b.op("aten::view", ts=base + i * 10, dur=9)
            b.op("aten::relu", ts=base + 90, dur=9)
            b.launch_kernel("void at::native::vectorized_elementwise_kernel<4, relu>", launch_ts=base + 92,
                            launch_dur=5, ts=base + 97, dur=60, grid=[1024, 1, 1], block=[256, 1, 1])
    return b


def test_recorded_host_bound_is_gpu_bound_without_the_profiler(tmp_path: Path) -> None:
    trace = host_of_small_ops(tmp_path)
    p = compute_profiler_cost(trace, 0)
    assert p.events_per_step == 1001  # 1,000 ops and the ProfilerStep marker
    assert (p.bound, p.unprofiled_bound) == ("host", "compute")
    assert p.recorded_step_ns == pytest.approx(STEP_US * 1000, rel=1e-3)
    # the first kernel once the first group's host is done (< 0.1 ms), then 100 kernels of 60 µs
    assert 6.0e6 <= p.unprofiled_step_ns <= 6.1e6, p.unprofiled_step_ns
    # the same replay as `stepscope whatif --unprofiled`
    assert simulate(trace, [WithoutProfiler()]).mean_ns(True) == pytest.approx(p.unprofiled_step_ns)


def test_the_verdict_says_it_and_the_host_findings_gain_from_the_unprofiled_step(tmp_path: Path) -> None:
    advice = run_advisor(analyze(host_of_small_ops(tmp_path)))
    v = advice.verdicts[0]
    assert v.bound == "host" and v.unprofiled_bound == "compute"
    # at half the cost (4 µs) a group's host is 50 µs, still under its 60 µs kernel: the GPU bounds that step
    # too, the first kernel starting 40 µs later
    assert 6.0e6 <= (v.low_cost_step_ns or 0) <= 6.15e6
    assert texts.unprofiled_text(v).startswith("Without the profiler's own cost (8 µs for each of the 1,001 ops "
                                               "it recorded a step) the step would be ~6.0 ms (~6.1 ms if it costs "
                                               "half that an op, as on some captures) and bound by GPU compute")
    launch = [f for f in advice.findings if f.rule == "launch-bound"]
    # recorded, graph capture would save ~4 ms (the host's 40 µs a group); without the profiler the GPU
    # already bounds the step and a graph saves only the first kernel's wait
    for f in launch:
        assert f.evidence["whatif_measured_ms"] == pytest.approx(v.unprofiled_step_ns / 1e6, abs=1e-3)
        assert f.est_gain_ns < 0.2e6, f.est_gain_ns


def test_a_gpu_bound_step_is_not_replayed(tmp_path: Path) -> None:
    b = TraceBuilder(device=H100)
    for s in range(3):
        b.step(s + 1, s * 10_000, 10_000)
        b.op("aten::mm", ts=s * 10_000 + 10, dur=20)
        b.launch_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_gmma", launch_ts=s * 10_000 + 15,
                        launch_dur=5, ts=s * 10_000 + 25, dur=9_900, grid=[1024, 1, 1], block=[256, 1, 1])
    p = compute_profiler_cost(b.load(tmp_path), 0)
    assert p.bound == "compute" and p.unprofiled_bound is None and not p.changes_bound


def test_a_cost_larger_than_the_step_is_not_this_hosts(tmp_path: Path) -> None:
    """Each 1 ms step: 200 ops of 4 µs back to back and a 0.1 ms kernel. At 8 µs an op the profiler would
    have cost 1.6 ms of a 1 ms step: the calibration cannot hold for this host (its profiler costs less an
    op), so the step is not replayed and the recording stands (TraceLens' H100 BERT inference: 1,756 ops
    x 8 µs = 14 ms in a 4.4 ms step had been called ~0.5 ms)."""
    b = TraceBuilder(device=H100)
    for s in range(3):
        t0 = s * 1_000
        b.step(s + 1, t0, 1_000)
        for i in range(200):
            b.op("aten::view", ts=t0 + i * 4.5, dur=4)
        b.launch_kernel("void at::native::vectorized_elementwise_kernel<4, relu>", launch_ts=t0 + 905,
                        launch_dur=5, ts=t0 + 912, dur=80, grid=[1024, 1, 1], block=[256, 1, 1])
    p = compute_profiler_cost(b.load(tmp_path), 0)
    assert p.events_per_step == 201 and p.bound == "host"
    assert p.unprofiled_step_ns is None and p.unprofiled_bound is None and not p.changes_bound


def write_step_log(folder: Path, none_ms: float, record_ms: float = 10.1, steps: int = 9,
                   hiccup_ms: float | None = None) -> None:
    """A ``stepscope run`` step log: steps 3-5 recorded, the others (step 0, the warm-up, at 20 ms) not; with
    ``hiccup_ms``, step 1 takes that long (the script's own warm-up, a machine's hiccup)."""
    def ms(i: int) -> float:
        if i == 1 and hiccup_ms is not None:
            return hiccup_ms
        return 20.1 if i == 0 else record_ms if 3 <= i < 6 else none_ms

    recs = [{"step": i, "end_s": i / 100, "batch_cost_s": ms(i) / 1e3, "reader_cost_s": 0.0, "samples": 8,
             "ips": 1.0, "profiler": "RECORD" if 3 <= i < 6 else "NONE"} for i in range(steps)]
    (folder / "stepscope-steps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_a_step_log_beside_the_trace_gives_this_machines_cost(tmp_path: Path) -> None:
    """Five steps timed without the profiler at 8.1 ms against the recorded 10.1: the profiler cost this
    machine 2.0 ms / 1,001 recorded ops = 1,998 ns an op (not the H200's 8 µs). At that cost the host,
    fully on the path, gives back exactly those 2 ms: the replayed step is the measured 8.1 ms, still
    host-bound (11 ops x 2 µs off each group's 95 µs of host, against a 60 µs kernel)."""
    write_step_log(tmp_path, none_ms=8.1)
    trace = small_ops().load(tmp_path)
    p = compute_profiler_cost(trace, 0)
    assert (p.cost_source, p.measured_steps, p.measured_step_ns) == ("measured", 5, 8.1e6)
    assert p.event_cost_ns == round(2.0e6 / 1001)
    assert p.unprofiled_step_ns == pytest.approx(8.1e6, rel=1e-3) and p.unprofiled_bound == "host"
    advice = run_advisor(analyze(trace))
    said = texts.unprofiled_text(advice.verdicts[0])
    assert "(2 µs for each of the 1,001 ops it recorded a step, this machine's: the 5 steps `stepscope run` timed " \
           "without the profiler took 8.1 ms at the median) the step would be ~8.1 ms, still bound by the host" in said
    launch = next(f for f in advice.findings if f.rule == "launch-bound")
    assert launch.evidence["whatif_unprofiled_us"] == pytest.approx(1.998)
    assert launch.step_ns == round(p.unprofiled_step_ns)


def test_a_slow_unprofiled_step_does_not_move_the_cost(tmp_path: Path) -> None:
    """One of the five unprofiled steps at 30 ms (a warm-up step of the script, a hiccup of the machine): the
    median stays 8.1 ms and the cost 1,998 ns an op; their mean (12.5 ms) would have put the cost at 0
    (the unprofiled step longer than the recorded 10.1)."""
    write_step_log(tmp_path, none_ms=8.1, hiccup_ms=30.0)
    p = compute_profiler_cost(small_ops().load(tmp_path), 0)
    assert (p.measured_steps, p.measured_step_ns, p.event_cost_ns) == (5, 8.1e6, round(2.0e6 / 1001))


def test_a_measured_cost_that_frees_the_gpu_changes_the_bound(tmp_path: Path) -> None:
    """Measured unprofiled steps of 6.05 ms: 4.05 ms over 1,001 ops = 4,046 ns an op; each group's host
    falls to 95 - 11 x 4.05 + 5 ≈ 55 µs, under the kernel's 60: the GPU bounds the step, as with 8 µs."""
    write_step_log(tmp_path, none_ms=6.05)
    p = compute_profiler_cost(small_ops().load(tmp_path), 0)
    assert p.event_cost_ns == round(4.05e6 / 1001)
    assert (p.bound, p.unprofiled_bound) == ("host", "compute")
    assert 6.0e6 <= p.unprofiled_step_ns <= 6.1e6


def test_a_step_log_of_the_recorded_pace_is_no_profiler_cost(tmp_path: Path) -> None:
    """Unprofiled steps as long as the recorded ones: the profiler cost nothing measurable here, so the
    step is not replayed (the 8 µs constant would have made it GPU-bound)."""
    write_step_log(tmp_path, none_ms=10.2)
    p = compute_profiler_cost(small_ops().load(tmp_path), 0)
    assert p.cost_source == "measured" and p.event_cost_ns == 0
    assert p.unprofiled_step_ns is None and not p.changes_bound


def test_a_step_the_user_gives_measures_the_cost(tmp_path: Path) -> None:
    """``--step-ms 8.1`` (a training log's step time) on the same trace without a step log: the cost per op is
    measured from it as from a step log — 2.0 ms / 1,001 ops — and the verdict says whose step it was; the
    command line applies it to every trace-reading command."""
    from click.testing import CliRunner

    from stepscope.cli import cli
    from stepscope.ingest.step_records import with_given_step

    trace = with_given_step(small_ops().load(tmp_path), 8.1)
    p = compute_profiler_cost(trace, 0)
    assert (p.cost_source, p.measured_step_ns, p.event_cost_ns) == ("given", 8.1e6, round(2.0e6 / 1001))
    said = texts.unprofiled_text(run_advisor(analyze(trace)).verdicts[0])
    assert "this machine's: the 8.1 ms step you timed without the profiler (--step-ms)) the step would be ~8.1" in said
    res = CliRunner().invoke(cli, ["advise", str(tmp_path), "--step-ms", "8.1", "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    unprofiled = json.loads(res.output)["verdicts"][0]["unprofiled"]
    assert unprofiled["cost_source"] == "given" and unprofiled["event_cost_us"] == pytest.approx(1.998)
    bad = CliRunner().invoke(cli, ["advise", str(tmp_path), "--step-ms", "0"])
    assert bad.exit_code == 2 and "--step-ms" in bad.output


def test_whatif_unprofiled_takes_the_traces_own_cost(tmp_path: Path) -> None:
    """``stepscope whatif --unprofiled`` without a value on a trace with a step log replays at the cost the log
    measures (1,998 ns an op: the verdict's step, 8.1 ms), not at the calibrated 8 µs (which takes 6 µs more off
    each op); a value given is taken as given."""
    from click.testing import CliRunner

    from stepscope.cli import cli

    write_step_log(tmp_path, none_ms=8.1)
    p = compute_profiler_cost(small_ops().load(tmp_path), 0)
    assert p.unprofiled_step_ns is not None

    def predicted_ms(*args: str) -> float:
        res = CliRunner().invoke(cli, ["whatif", str(tmp_path), *args, "--json", "--no-cache"])
        assert res.exit_code == 0, res.output
        return float(json.loads(res.output)["job"]["predicted_mean_ms"])

    assert predicted_ms("--unprofiled") == pytest.approx(p.unprofiled_step_ns / 1e6, abs=1e-3)
    assert predicted_ms("--unprofiled", "8") < p.unprofiled_step_ns / 1e6 - 0.5
