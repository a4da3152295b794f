"""The kernel remedies as what-ifs (``whatif/kernel_remedies.py``): under-filled grids, misaligned
half-precision GEMMs, unfused elementwise runs, math-backend attention — each kernel re-timed by its
rule's own model, the host waiting for the device in ``cudaDeviceSynchronize`` so the step follows.

Every step is 10 ms on a V100 (80 SMs); the expected savings are computed by hand in each test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from stepscope import load
from stepscope.analysis.elementwise_runs import _first_longest
from stepscope.analysis.sync import compute_sync
from stepscope.analysis.whatif.algo_search import NoAlgoSearch
from stepscope.analysis.whatif.host_work import MoveHostWork
from stepscope.analysis.whatif.kernel_remedies import FillSms, FusedAttention, FuseElementwise, PadGemms
from stepscope.analysis.whatif.launch_blocking import NoLaunchBlocking
from stepscope.analysis.whatif.simulate import IDLE_CAVEAT, simulate
from stepscope.analysis.whatif.transforms import HostOverhead, Transform
from stepscope.analysis.whatif.zero_grad import SetToNone
from stepscope.analysis.zero_grad import compute_zero_grad
from stepscope.cli import cli
from tests.builders import TraceBuilder
from tests.unit.advisor.scenes import SCENES, device_sync, gemm


def saved_ms(path: Path, change: Transform) -> float:
    trace = load(path, use_cache=False)
    return (simulate(trace, []).mean_ns(True) - simulate(trace, [change]).mean_ns(True)) / 1e6


def grids_trace(tmp_path: Path) -> Path:
    """Per step, three kernels queued on one stream, the host syncing on the last: 4 ms of 10 blocks,
    4 ms of 40 blocks, and a 9 µs kernel of 1 block (under the 10 µs floor: left alone)."""
    b = TraceBuilder()
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("aten::mm", ts=t + 10, dur=40)
        start = t + 30
        for j, (blocks, dur) in enumerate(((10, 4_000), (40, 4_000), (1, 9))):
            b.launch_kernel("sgemm_splitk", launch_ts=t + 12 + 8 * j, launch_dur=5, ts=start, dur=dur,
                            grid=[blocks, 1, 1], block=[256, 1, 1])
            start += dur
        device_sync(b, t + 100, start + 10)
    return b.write(tmp_path / "grids.json")


def test_each_under_filled_grid_recovers_half_its_idle_sms(tmp_path: Path) -> None:
    # 4 x (1 - 10/80) x 0.5 + 4 x (1 - 40/80) x 0.5 = 1.75 + 1.0 ms; the 9 µs kernel stays
    assert saved_ms(grids_trace(tmp_path), FillSms()) == pytest.approx(2.75, abs=1e-3)
    # all of the idle SM time recovered: 3.5 + 2.0 ms
    assert saved_ms(grids_trace(tmp_path), FillSms(recoverable=1.0)) == pytest.approx(5.5, abs=1e-3)


def gemms_trace(tmp_path: Path) -> Path:
    """Per step, three GEMMs (M = N = 64) queued, the host syncing on the last: fp16 with K = 1001
    (misaligned, 3 ms), fp16 with K = 1000 (a multiple of 8, not of 64: 1 ms), and fp32 with K = 1001 (not
    half precision, no Tensor-Core alignment to gain: 3 ms)."""
    b = TraceBuilder()
    calls = ((1001, "c10::Half", 3_000), (1000, "c10::Half", 1_000), (1001, "float", 3_000))
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        start = t + 30
        for j, (k, dtype, dur) in enumerate(calls):
            b.op("aten::mm", ts=t + 10 + 40 * j, dur=30,
                 **{"Input Dims": [[64, k], [k, 64]], "Input type": [dtype, dtype]})
            b.launch_kernel("volta_h884gemm_64x64_nn", launch_ts=t + 15 + 40 * j, launch_dur=10, ts=start,
                            dur=dur, grid=[160, 1, 1], block=[256, 1, 1])
            start += dur
        device_sync(b, t + 200, start + 10)
    return b.write(tmp_path / "gemms.json")


def test_only_the_misaligned_half_precision_gemms_are_padded(tmp_path: Path) -> None:
    """Padded to K = 1008, the misaligned call does 2 x 64 x 64 x 1008 FLOPs at the aligned call's rate (2 x 64
    x 64 x 1000 FLOPs in 1 ms): 1.008 ms for its 3. With 64 as the multiple, K = 1000 is misaligned too and
    nothing runs aligned: the device's peak would do either in under a µs, too small for a throughput to
    tell, so each takes half its time (the 3 ms and the 1 ms)."""
    assert saved_ms(gemms_trace(tmp_path), PadGemms()) == pytest.approx(3.0 - 1.008, abs=1e-3)
    assert saved_ms(gemms_trace(tmp_path), PadGemms(align=64)) == pytest.approx(1.5 + 0.5, abs=1e-3)


def test_a_fused_run_costs_its_longest_kernel(tmp_path: Path) -> None:
    """The unfused-elementwise scene: mul → add → relu (1, 1.5, 0.5 ms) queued behind a 5 ms GEMM, the host
    syncing on them: one pass of 1.5 ms, 1.5 ms saved; their twin on three sizes is not a run."""
    for on, expected in ((True, 1.5), (False, 0.0)):
        b = TraceBuilder()
        SCENES["unfused-elementwise"](b, on)
        assert saved_ms(b.write(tmp_path / f"ew_{on}.json"), FuseElementwise()) == pytest.approx(expected, abs=1e-3)


def test_the_first_of_equally_long_kernels_is_the_runs_pass() -> None:
    run = np.array([0, 0, 0, 1, 1])
    dur = np.array([5, 7, 7, 3, 3])
    longest = np.array([7, 3])
    assert _first_longest(run, dur, longest).tolist() == [False, True, False, True, False]


def test_math_attention_takes_its_flops_at_the_peak(tmp_path: Path) -> None:
    """The attention-math-fallback scene (see tests/unit/advisor/test_rules.py): the backward math kernel
    now ends before the sync is called, which returns after its own 10 µs: 3 ms − 10 µs saved."""
    b = TraceBuilder()
    SCENES["attention-math-fallback"](b, True)
    assert saved_ms(b.write(tmp_path / "attn.json"), FusedAttention()) == pytest.approx(2.99, abs=1e-3)


def test_set_to_none_frees_what_holds_the_step(tmp_path: Path) -> None:
    """The zero_grad span (500 µs of host, 10 fills of 40 µs) before a GEMM's launch holds the step: 0.5 ms
    (the zero-grad-not-none scene). Queued behind an 8 ms GEMM launched first, the span runs while the
    GEMM does and only the fills' 0.4 ms of device time reaches the step."""
    b = TraceBuilder()
    SCENES["zero-grad-not-none"](b, True)
    assert saved_ms(b.write(tmp_path / "before.json"), SetToNone()) == pytest.approx(0.5, abs=1e-3)
    b = TraceBuilder()
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("aten::mm", ts=t + 10, dur=30)
        b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=t + 15, launch_dur=10, ts=t + 30, dur=8_000)
        b.op("Optimizer.zero_grad#SGD.zero_grad", ts=t + 100, dur=500, cat="user_annotation")
        for j in range(10):
            b.op("aten::zero_", ts=t + 110 + j * 40, dur=30)
            b.launch_kernel("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>",
                            launch_ts=t + 115 + j * 40, launch_dur=5, ts=t + 8_030 + j * 40, dur=40)
        device_sync(b, t + 700, t + 8_440)
    assert saved_ms(b.write(tmp_path / "behind.json"), SetToNone()) == pytest.approx(0.4, abs=1e-3)


def accumulation_trace(tmp_path: Path) -> Path:
    """Per step: zero_grad zeroes two gradients (100 µs of host, two 40 µs fills), a 3 ms GEMM, then three
    AccumulateGrad calls each adding a 300 µs kernel behind it — two into the zeroed gradients, the third a
    second accumulation (of a gradient already summed) — the host syncing on the last."""
    b = TraceBuilder()
    for i in range(3):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        b.op("Optimizer.zero_grad#SGD.zero_grad", ts=t + 10, dur=100, cat="user_annotation")
        for j in range(2):
            b.op("aten::zero_", ts=t + 20 + j * 40, dur=30)
            b.launch_kernel("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>",
                            launch_ts=t + 25 + j * 40, launch_dur=5, ts=t + 40 + j * 40, dur=40)
        gemm(b, t + 200, dur=3_000)  # its kernel runs t + 220 .. t + 3,220
        for j in range(3):
            b.op("torch::autograd::AccumulateGrad", ts=t + 300 + j * 100, dur=50)
            b.op("aten::add_", ts=t + 305 + j * 100, dur=40)
            b.launch_kernel("void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>",
                            launch_ts=t + 310 + j * 100, launch_dur=5, ts=t + 3_220 + j * 300, dur=300)
        device_sync(b, t + 700, t + 4_130)
    return b.write(tmp_path / "accumulate.json")


def test_set_to_none_hands_the_first_gradient_over(tmp_path: Path) -> None:
    """The two gradients zeroed are each added to once more (their zeros read and the sum written): with
    set_to_none the backward hands them over. The span's 100 µs held the GEMM's launch, the two adds the
    device: 0.1 + 2 x 0.3 ms a step; the third add (a second accumulation) and the fills (idle time before
    the GEMM) stay."""
    path = accumulation_trace(tmp_path)
    zg = compute_zero_grad(load(path, use_cache=False), 0)
    assert len(zg.activities) == 6 and len(zg.accumulations) == 6  # two of each a step
    assert saved_ms(path, SetToNone()) == pytest.approx(0.7, abs=1e-3)


def search_trace(tmp_path: Path) -> Path:
    """The conv-algo-search scene (a 7 ms call a step: 14 trials of 400 µs, each waited for 410 µs), then a
    call of the same op that did not search: 300 µs on the host, one 400 µs kernel waited for."""
    b = TraceBuilder()
    SCENES["conv-algo-search"](b, True)
    for t in (0, 10_000, 20_000):
        b.op("aten::cudnn_convolution", ts=t + 7_100, dur=300)
        b.launch_kernel("conv_algo_0_kernel", launch_ts=t + 7_110, launch_dur=10, ts=t + 7_130, dur=400)
        b.add(ph="X", cat="cuda_runtime", name="cudaEventSynchronize", pid=b.pid, tid=b.tid, ts=t + 7_125,
              dur=410, args={})
    return b.write(tmp_path / "search.json")


def test_a_searching_call_takes_the_host_time_of_one_that_did_not(tmp_path: Path) -> None:
    """The searching call's 1.26 ms of host work takes the 300 µs of the call that did not search, its waits
    their 5 µs tail: 7 - 0.3 - 14 x 0.005 ms a step. The search is cuDNN's host work, not launch overhead a
    CUDA graph would remove (graph capture leaves it), and its waits are cuDNN's, not the step's syncs (the
    sync analysis counts only the plain call's wait)."""
    path = search_trace(tmp_path)
    assert saved_ms(path, NoAlgoSearch()) == pytest.approx(7.0 - 0.3 - 14 * 0.005, abs=1e-3)
    # at most the host time outside the searching call and the plain call's wait: 10 - 7 - 0.41 ms (it had
    # taken the search's 1.26 ms of host work too)
    assert saved_ms(path, HostOverhead(0.0)) <= 10.0 - 7.0 - 0.41 + 1e-3
    assert compute_sync(load(path, use_cache=False), 0).sync_count.tolist() == [1, 1, 1]


def test_launches_that_stop_blocking_leave_the_kernels_their_time(tmp_path: Path) -> None:
    """The cuda-launch-blocking scene: ten launch calls a step wait 820 µs each for their 800 µs kernel.
    Unblocked (5 µs each) the host runs ahead and the kernels run back to back: the 10 ms step becomes
    their 8 ms, not 10 − 8.15 ms; launches that never blocked (its twin) change nothing."""
    for on, expected in ((True, 1.993), (False, 0.0)):
        b = TraceBuilder()
        SCENES["cuda-launch-blocking"](b, on)
        assert saved_ms(b.write(tmp_path / f"lb_{on}.json"), NoLaunchBlocking()) == pytest.approx(expected, abs=1e-3)


def test_host_work_moved_off_the_step_saves_what_the_gpu_waited(tmp_path: Path) -> None:
    """Per 10 ms step: a GEMM (t + 20 .. 2,020), a 3 ms CPU-only op (t + 100 .. 3,100: the GPU idle in it
    1.08 ms), then a 6 ms GEMM launched at t + 3,205 the host syncs on (t + 3,300 .. 9,230). Without the op
    the second GEMM is launched at t + 205 and queues behind the first: it runs 2,020 .. 8,020 and the
    sync returns at 8,030 — 1.2 ms saved, the GPU's idle time in the op and the 120 µs to the launch after
    it. A 0.3 ms op, run while the first GEMM keeps the GPU busy, idles it for nothing: under the 5 % floor,
    it stays."""
    for op_us, expected in ((3_000, 1.2), (300, 0.0)):
        b = TraceBuilder()
        for i in range(3):
            t = i * 10_000
            b.step(i + 1, t, 10_000)
            gemm(b, t, dur=2_000)
            b.op("metrics_on_cpu", ts=t + 100, dur=op_us)
            gemm(b, t + 200 + op_us, dur=6_000)
            device_sync(b, t + 300 + op_us, t + 6_230 + op_us)
        path = b.write(tmp_path / f"host_{op_us}.json")
        assert saved_ms(path, MoveHostWork()) == pytest.approx(expected, abs=1e-3)


def test_whatif_names_each_kernel_remedy(tmp_path: Path) -> None:
    """``stepscope whatif --fill-sms --pad-gemms`` replays both together (the grids trace has no
    misaligned GEMM: the prediction is the grids' alone, 10 − 2.75 ms)."""
    path = str(grids_trace(tmp_path))
    res = CliRunner().invoke(cli, ["whatif", path, "--fill-sms", "--pad-gemms", "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["job"]["predicted_mean_ms"] == pytest.approx(7.25, abs=1e-3)


def test_a_change_with_nothing_to_act_on_says_so(tmp_path: Path) -> None:
    """On the GEMMs trace (no under-filled grid: 160 blocks on 80 SMs) ``--fill-sms`` saves nothing and the
    prediction says why; ``--pad-gemms``, which acts there, gets no such caveat."""
    path = str(gemms_trace(tmp_path))
    res = CliRunner().invoke(cli, ["whatif", path, "--fill-sms", "--pad-gemms", "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    caveats = json.loads(res.output)["caveats"]
    assert caveats == [IDLE_CAVEAT.format(basis=FillSms().basis())]


def test_a_replayed_finding_prints_the_command_that_replays_it(tmp_path: Path) -> None:
    """The under-filled-grid finding of the grids trace names ``stepscope whatif TRACE --remedy fill-sms``,
    and that command predicts the finding's step (10 − 2.75 ms); every remedy's ``options`` (what the web
    form is filled with) are flags whatif takes, and predict what ``--remedy NAME`` does."""
    from stepscope.advisor.engine import run_advisor
    from stepscope.analysis.bundle import analyze
    from stepscope.analysis.whatif.remedies import REMEDY_OPTIONS
    from stepscope.report.advice_json import finding_dict

    path = grids_trace(tmp_path)
    f = next(f for f in run_advisor(analyze(load(path, use_cache=False))).findings if f.rule == "under-filled-grid")
    assert f.est_gain_ms == pytest.approx(2.75, abs=1e-3)
    assert "(stepscope whatif TRACE --remedy fill-sms)" in finding_dict(f)["basis"]

    def predicted(*flags: str) -> float:
        res = CliRunner().invoke(cli, ["whatif", str(path), *flags, "--json", "--no-cache"])
        assert res.exit_code == 0, (flags, res.output)
        return float(json.loads(res.output)["job"]["predicted_mean_ms"])

    assert predicted("--remedy", "fill-sms") == pytest.approx(10.0 - 2.75, abs=1e-3)
    assert predicted("--fill-sms", "--remedy", "fill-sms") == predicted("--fill-sms")  # once, however named
    for name, options in REMEDY_OPTIONS.items():
        flags = [part for k, v in options.items() for part in
                 ([f"--{k.replace('_', '-')}"] if v is True else
                  [x for item in (v if isinstance(v, list) else [v]) for x in (f"--{k.replace('_', '-')}", str(item))])]
        assert predicted(*flags) == pytest.approx(predicted("--remedy", name), abs=1e-6), name
