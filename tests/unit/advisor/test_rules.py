"""Each rule fires on a micro trace made to trigger it, and stays quiet on its twin that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import Advice, run_advisor
from stepscope.advisor.finding import Finding
from stepscope.advisor.rules import ALL_RULES
from stepscope.analysis.bundle import analyze
from stepscope.report import texts
from stepscope.report.advice_json import finding_dict
from tests.builders import TraceBuilder, load_ranks
from tests.unit.advisor.scenes import SCENES, gemm, rank_builder, steps


def advise_scene(tmp_path: Path, rule: str, on: bool) -> Advice:
    b = TraceBuilder()
    SCENES[rule](b, on)
    return run_advisor(analyze(b.load(tmp_path)))


#: gains computed by hand from the scenes (ms per 10 ms step)
EXPECTED_GAIN_MS = {
    "dataloader-bound": 4.0,  # 4 ms of DataLoader with the GPU idle
    "no-tensor-cores": 8.0 * (1 - 15.7 / 125.0),  # 8 ms FP32 conv kernel x (1 - V100's FP32 / FP16 Tensor-Core peak)
    "tf32-not-bf16": 4.0,  # 8 ms TF32 GEMM x (1 - A100's TF32 / BF16 Tensor-Core peak: 156 / 312)
    "gemm-dims-not-multiple-of-8": 3.0,  # replayed: the 6 ms misaligned half GEMM the host syncs on, x 0.5
    "under-filled-grid": 3.5,  # replayed: the 8 ms kernel the host syncs on, x (1 - 10/80) idle SMs x 0.5
    "comm-not-overlapped": 3.0,  # 3 ms all-reduce after the 5 ms of compute
    "unfused-elementwise": 1.5,  # replayed: a 1 + 1.5 + 0.5 ms run the host syncs on fused into one 1.5 ms pass
    "heavy-host-op-no-gpu": 3.0,  # 3 ms host op, GPU idle throughout
    "copy-bound": 3.0,  # the 3 ms GEMM the 6 ms copy could run under, both on the path
    "compile-in-step": 3.0,  # replayed: the 3 ms compile before the GEMM's launch leaves the host's step
    "compile-fell-back": 0.0,  # what the eager GEMM takes compiled is not in the trace: no estimate
    # replayed: the math kernels (2 x 3 ms) take the 0.94 GFLOP at the V100's 125 TFLOP/s fp16 peak (3.76 µs
    # each); the forward one ran under the host's gap before the backward op anyway, the backward one now ends
    # (t + 3,123.8) before the sync is called (t + 3,130), which returns after its own 10 µs: 6,130 -> 3,140
    "attention-math-fallback": 3.0 - 0.01,
    "cudnn-benchmark-off": 1.2,  # 8 ms wgrad_alg0 x 0.15
    # replayed: the 0.7 ms nchwToNhwc transform gone, the conv queued behind it starts 0.7 ms sooner and
    # the host, waiting for it, returns that much sooner
    "channels-last": 0.7,
    # replayed: the 0.8 ms copy (asynchronous) ends before the host launches the GEMM, so halving it
    # moves nothing on the critical path: no gain (the old rule of thumb said 0.4 ms)
    "pageable-memcpy": 0.0,
    "small-memcpy": 2.7,  # replayed: the 60 aten::to of 45 µs that issue the copies leave the host's step
    # replayed: the 7 ms call (14 waits of 410 µs for its trials, 1.26 ms of host work) runs one algorithm: no
    # call did without searching, so its host work takes 1/14 of the call (500 µs), the waits their 5 µs tail,
    # and its 14 kernels of 400/14 µs run under that: the step loses 7 - 0.5 - 14 x 0.005 ms
    "conv-algo-search": 7.0 - 0.5 - 14 * 0.005,
    # replayed: the 10 launch calls take 5 µs instead of 820 (8.15 ms of waiting), but the ten 800 µs kernels
    # then run back to back: the 10 ms step becomes their 8 ms (and a few µs of the first launch)
    "cuda-launch-blocking": 1.993,
    # replayed: the GEMM's launch waited behind the 500 µs Optimizer.zero_grad span (its 10 launches), the host
    # syncing on the GEMM: without the span it starts, and the step ends, 500 µs sooner
    "zero-grad-not-none": 0.5,
    # replayed: the 3.5 ms Optimizer.step span (40 launches and the ops around them) at a third, and its
    # 40 kernels of 50 µs at a third: they keep up with the faster launches, so the step loses 3.5 x 2/3
    "small-kernel-optimizer": 3.5 * (1 - 1 / 3),
    # replayed: the 8 ms no op covers (and the step's first 10 µs) leave the step; its 1.99 ms op stays
    "host-outside-ops": 8.01,
    "host-stalled": 3.0,  # steps 2 and 3's 3,200 µs mm, 3,000 beyond the median 200: the median of 0, 3, 3 ms
    "float64-ops": 1.0,  # half the 2 ms float64 log_softmax (the 100 µs mul by a Python float is no float64 tensor)
    "allocator-fragmentation": 0.0, "memory-near-capacity": 0.0, "variable-input-shapes": 0.0,
    "outdated-software": 0.0,
}


def rules_of(advice: Advice) -> set[str]:
    return {f.rule for f in advice.findings}


@pytest.mark.parametrize("rule", sorted(SCENES))
def test_rule_fires(tmp_path: Path, rule: str) -> None:
    advice = advise_scene(tmp_path, rule, True)
    errors = [n for n in advice.not_run if n.reason.startswith("internal error")]
    assert not errors, errors
    found = [f for f in advice.findings if f.rule == rule]
    assert found, (rule, [(n.rule, n.reason) for n in advice.not_run if n.rule == rule], rules_of(advice))
    f = found[0]
    assert f.evidence and f.change.key
    assert f.est_gain_ns >= 0 and f.step_ns > 0
    if rule in EXPECTED_GAIN_MS:
        assert f.est_gain_ms == pytest.approx(EXPECTED_GAIN_MS[rule], abs=0.01)
    d = finding_dict(f)
    assert d["rule"] == rule and d["advice"] and "?" not in d["advice"].split("(")[0][:40]


@pytest.mark.parametrize("rule", sorted(SCENES))
def test_rule_quiet(tmp_path: Path, rule: str) -> None:
    advice = advise_scene(tmp_path, rule, False)
    assert rule not in rules_of(advice)
    assert rule not in {n.rule for n in advice.not_run}  # it ran, and found nothing


def test_channels_last_only_when_convolutions_run_on_tensor_cores(tmp_path: Path) -> None:
    """FP32 SIMT convolutions with cuDNN layout transforms around them (hta/ns_resolution_v100_ddp):
    "Convolutions run in NCHW on Tensor Cores" would be false; no-tensor-cores says what matters."""
    b = TraceBuilder()
    SCENES["channels-last"](b, False)
    for t in range(0, 30_000, 10_000):
        b.launch_kernel("void cudnn::ops::nchwToNhwcKernel<float>", launch_ts=t + 15, launch_dur=5, ts=t + 30,
                        dur=700, grid=[432, 1, 1], block=[256, 1, 1])
    assert "channels-last" not in rules_of(run_advisor(analyze(b.load(tmp_path))))


def test_a_sync_waiting_for_queued_kernels_is_to_be_removed(tmp_path: Path) -> None:
    """``.item()`` behind a 3 ms GEMM: the host waits for the kernel, not for a copy."""
    (f,) = [f for f in advise_scene(tmp_path, "sync-in-step", True).findings if f.rule == "sync-in-step"]
    assert f.change.key == "remove-step-sync" and f.evidence["wait_on_copies_pct"] == 0.0


def test_a_bulk_read_back_is_to_be_overlapped_not_removed(tmp_path: Path) -> None:
    """An offloaded optimizer: after a 1 ms GEMM, ``aten::to`` reads 32 MiB back (a 4 ms pageable copy
    the host waits 4.9 ms for: 82 % of the wait is the copy itself), then 3 ms of CPU Adam. The host
    needs the data: the change is to copy asynchronously and consume it piece by piece."""
    b = TraceBuilder()
    for t in steps(b):
        gemm(b, t + 10, dur=1_000)
        b.op("aten::to", ts=t + 100, dur=4_950)
        b.launch_kernel("Memcpy DtoH (Device -> Pageable)", launch_ts=t + 110, launch_dur=4_900, ts=t + 1_010,
                        dur=4_000, runtime="cudaMemcpyAsync", cat="gpu_memcpy", bytes=32 << 20)
        b.op("Optimizer.step#Adam.step", ts=t + 5_100, dur=3_000, cat="user_annotation")
    (f,) = [f for f in run_advisor(analyze(b.load(tmp_path))).findings if f.rule == "sync-in-step"]
    assert f.evidence["sync_ms"] == pytest.approx(4.9) and f.evidence["d2h_copy_ms"] == pytest.approx(4.0)
    assert f.evidence["wait_on_copies_pct"] == pytest.approx(81.6)
    assert f.change.key == "overlap-device-to-host"
    assert f.change.params == {"mb_per_step": 33.6, "gb_per_s": 8.39}  # 33,554,432 bytes in 4 ms
    assert "pinned buffers" in finding_dict(f)["advice"] and ".item()" not in finding_dict(f)["advice"]


def test_a_synchronous_copy_to_the_device_is_made_asynchronous_not_removed(tmp_path: Path) -> None:
    """``randn(...).to(dev)`` in the loop (hta/amd_mi250_minitoy): the host blocks 1.5 ms a step in a
    synchronous ``hipMemcpyWithStream`` writing a 4 MiB batch to the device. Nothing is read back, so
    "no .item() / .cpu()" is the wrong advice: make the tensor on the device or copy it from pinned
    memory without blocking."""
    b = TraceBuilder()
    for t in steps(b):
        b.op("aten::copy_", ts=t + 10, dur=1_520)
        b.launch_kernel("Memcpy HtoD (Pageable -> Device)", launch_ts=t + 15, launch_dur=1_500, ts=t + 20,
                        dur=1_400, runtime="hipMemcpyWithStream", cat="gpu_memcpy", bytes=4 << 20)
        gemm(b, t + 1_600, dur=1_000)
    (f,) = [f for f in run_advisor(analyze(b.load(tmp_path))).findings if f.rule == "sync-in-step"]
    assert f.evidence["in_copies_to_device_pct"] == pytest.approx(100.0) and f.evidence["d2h_copy_ms"] == 0.0
    assert f.change.key == "async-copy-to-device" and f.change.params["call"] == "hipMemcpyWithStream"
    advice = finding_dict(f)["advice"]
    assert "non_blocking=True" in advice and ".item()" not in advice


def test_straggler_and_imbalance(tmp_path: Path) -> None:
    """Rank 3 arrives 4 ms late at every all-reduce; nothing in these 10 ms host steps waits for the
    device (it is done at 6.6 ms), so the job replayed with rank 3 fixed is no shorter: gain 0."""
    trace = load_ranks([rank_builder(r, 6_000 if r == 3 else 2_000) for r in range(4)], tmp_path)
    advice = run_advisor(analyze(trace))
    stragglers = [f for f in advice.findings if f.rule == "straggler-rank"]
    assert [f.rank for f in stragglers] == [3]
    assert stragglers[0].evidence["slow_rank"] == 3
    assert stragglers[0].evidence["late_ms"] == pytest.approx(4.0, rel=0.05)
    assert stragglers[0].est_gain_ns == 0 and stragglers[0].basis == "replayed"
    # rank 3's unequal work is the straggler's cause: no second finding (load-imbalance) for it
    assert not [f for f in advice.findings if f.rule == "load-imbalance"]


def test_unequal_work_nobody_waits_for_is_no_finding(tmp_path: Path) -> None:
    """Rank 3 computes 6 ms, the others 2 ms, but every all-reduce starts at t+7000 on every rank (it
    does not wait for the GEMM): nobody arrives late, so neither rule fires, whatever the compute totals."""
    builders = []
    for r in range(4):
        b = rank_builder(r, 6_000 if r == 3 else 2_000)
        b.events = [e for e in b.events if not str(e.get("name", "")).startswith("ncclKernel")]
        for t in (0, 10_000, 20_000):
            b.launch_kernel("ncclKernel_AllReduce_RING_LL_Sum_float", launch_ts=t + 55, launch_dur=5, ts=t + 7_000,
                            dur=500, stream=20)
        builders.append(b)
    found = rules_of(run_advisor(analyze(load_ranks(builders, tmp_path))))
    assert "straggler-rank" not in found and "load-imbalance" not in found


def test_balanced_ranks_quiet(tmp_path: Path) -> None:
    trace = load_ranks([rank_builder(r, 2_000) for r in range(4)], tmp_path)
    found = rules_of(run_advisor(analyze(trace)))
    assert "straggler-rank" not in found and "load-imbalance" not in found


def test_every_rule_has_a_scene_or_a_cluster_test() -> None:
    ids = {m.RULE_ID for m in ALL_RULES}
    assert ids - set(SCENES) == {"straggler-rank", "load-imbalance", "pipeline-bubble"}
    assert len(ids) >= 15


def test_launch_bound_without_launch_links_reads_the_host_part_of_the_path(tmp_path: Path) -> None:
    """An Ascend text export's case: kernels linked to no launch call, so no idle gap can be told
    host-wait. Three 10 ms steps, each 6 ms of host op then a 4 ms kernel: the host is 6 ms of the
    critical path per step, and launch-bound says so (the db layout, with its launch calls, says the
    same by its idle analysis)."""
    b = TraceBuilder()
    for k, t in enumerate(range(0, 30_000, 10_000)):
        b.step(k + 1, ts=t, dur=10_000)
        b.op("aten::slow_host_work", ts=t, dur=6_000)
        b.gpu("conv_kernel", ts=t + 6_000, dur=4_000)
    advice = run_advisor(analyze(b.load(tmp_path)))
    (f,) = [f for f in advice.findings if f.rule == "launch-bound"]
    assert f.basis == "host-on-path" and f.est_gain_ms == pytest.approx(6.0, abs=0.01)
    assert f.evidence["host_wait_pct"] == pytest.approx(60.0)


def test_a_multi_process_loaders_waits_are_its_period_halved_not_fetched_by_4_workers(tmp_path: Path) -> None:
    """The dataloader scene with the multi-process iterator: the 4 ms calls are waits for workers that
    already exist, not fetches '4 DataLoader workers' would divide (the H200 capture with 8 workers was
    told so). The remedy halves the loader's time per batch: its period P is the mean step (every step
    waits: 10 ms, the rest 6 ms), halved 5 ms < 6: no wait, 4 ms saved a step; the change says the loader
    already has workers."""
    b = TraceBuilder()
    for t in range(0, 30_000, 10_000):
        b.step(t // 10_000 + 1, ts=t, dur=10_000)
        b.op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ts=t + 10, dur=4_000,
             cat="user_annotation")
        b.launch_kernel("sgemm", launch_ts=t + 4_060, launch_dur=5, ts=t + 4_080, dur=5_800)
    (f,) = [f for f in run_advisor(analyze(b.load(tmp_path))).findings if f.rule == "dataloader-bound"]
    basis = str(f.evidence["whatif_basis"])
    assert f.basis == "replayed" and "time per batch × 0.5" in basis and "CPU-only" not in basis
    assert f.est_gain_ms == pytest.approx(4.0, abs=0.1)
    assert f.change is not None and f.change.key == "speed-up-input-pipeline"
    assert "already has workers" in texts.change_text(f)


def test_launch_bound_says_python_outside_ops_when_it_holds_the_host_path(tmp_path: Path) -> None:
    """Three 10 ms steps: an op [t, t+60] launches a 500 µs kernel at t+20, then the host runs Python
    no op covers until the next step (metrics after a ``.cpu()``, say): the GPU idles ~9.4 ms a step
    waiting for the host, and the host's time on the path is almost all outside every op — so the
    change is to move that code out of the step (graphs and compile would not remove it); its twin
    with the same time inside an op keeps ``reduce-host-work``."""
    def advice(covered: bool) -> Advice:
        b = TraceBuilder()
        for k, t in enumerate(range(0, 30_000, 10_000)):
            b.step(k + 1, ts=t, dur=10_000)
            b.op("aten::mm", ts=t, dur=60)
            b.launch_kernel("sgemm", launch_ts=t + 20, launch_dur=10, ts=t + 40, dur=500)
            if covered:
                b.op("aten::sort", ts=t + 100, dur=9_800)
        out = tmp_path / str(covered)
        out.mkdir()
        return run_advisor(analyze(b.load(out)))

    (f,) = [f for f in advice(False).findings if f.rule == "launch-bound"]
    assert f.change.key == "move-python-off-path"
    assert float(f.change.params["untraced_pct"]) > 90.0
    (g,) = [f for f in advice(True).findings if f.rule == "launch-bound"]
    assert g.change.key == "reduce-host-work"


def _launch_bound_of_ops(tmp_path: Path, op: str, calls: int, every_us: int, op_us: int, launch_at_us: int,
                         launch_us: int) -> Finding:
    """Three 10 ms steps of ``calls`` ops, one every ``every_us``, each launching a 5 µs kernel that
    starts 5 µs after its launch call ends; the launch-bound finding."""
    b = TraceBuilder()
    for k, t in enumerate(range(0, 30_000, 10_000)):
        b.step(k + 1, ts=t, dur=10_000)
        for j in range(calls):
            start = t + every_us * j
            b.op(op, ts=start, dur=op_us)
            b.launch_kernel(f"{op}_kernel", launch_ts=start + launch_at_us, launch_dur=launch_us,
                            ts=start + launch_at_us + launch_us + 2, dur=5)
    (f,) = [f for f in run_advisor(analyze(b.load(tmp_path))).findings if f.rule == "launch-bound"]
    return f


def test_a_models_python_between_its_ops_is_not_loop_code(tmp_path: Path) -> None:
    """The same untraced host time as above but in 40 short gaps a step (each op [t + 240j, +10]
    launches a 5 µs kernel, then 230 µs no op covers): a model's own Python between its ops, which
    graphs and compile do remove — so ``reduce-host-work``, not ``move-python-off-path``, though
    the untraced part outweighs launches and ops (the H100 BERT trace without its Python frames)."""
    f = _launch_bound_of_ops(tmp_path, "aten::add", calls=40, every_us=240, op_us=10, launch_at_us=2, launch_us=5)
    host = f.evidence["host_path_pct"]
    assert isinstance(host, dict) and host["untraced"] > host["launch"] + host["host_ops"]
    assert f.change.key != "move-python-off-path"


def test_a_heavy_host_op_under_python_frames_is_found(tmp_path: Path) -> None:
    """The ``heavy-host-op-no-gpu`` scene recorded with ``with_stack=True``: Python frames wrap each
    step's work and the metrics op, so no op is a direct child of ``ProfilerStep#N``. The frames are
    transparent: the 3 ms op is found all the same (an H200 capture lost its CPU SVD this way), and
    every finding, gain and change is the one the scene gets without frames."""
    from tests.unit.advisor.scenes import gemm, steps

    def advice(frames: bool) -> Advice:
        b = TraceBuilder()
        for t in steps(b):
            if frames:
                b.add(ph="X", cat="python_function", name="train.py(20): train_step", pid=b.pid, tid=b.tid,
                      ts=t + 1, dur=9_990, args={})
            gemm(b, t + 10, dur=4_000)
            if frames:
                b.add(ph="X", cat="python_function", name="train.py(30): metrics", pid=b.pid, tid=b.tid,
                      ts=t + 4_090, dur=3_020, args={})
            b.op("compute_metrics", ts=t + 4_100, dur=3_000)
            gemm(b, t + 7_200, dur=2_000)
        out = tmp_path / str(frames)
        out.mkdir()
        return run_advisor(analyze(b.load(out)))

    with_frames, without = advice(True), advice(False)
    (f,) = [f for f in with_frames.findings if f.rule == "heavy-host-op-no-gpu"]
    assert f.est_gain_ms == pytest.approx(EXPECTED_GAIN_MS["heavy-host-op-no-gpu"], abs=0.01)
    assert [(f.rule, f.est_gain_ns, f.change) for f in with_frames.findings] == \
        [(f.rule, f.est_gain_ns, f.change) for f in without.findings]


def test_math_attention_kernels_are_not_a_precision_choice(tmp_path: Path) -> None:
    """SDPA's math backend runs its fp16 attention as FP32 GEMMs (here ``volta_sgemm`` under
    ``aten::bmm`` and under its ``BmmBackward0``): ``no-tensor-cores`` would tell a program already
    in half precision to enable AMP (an H200 capture, ``r12/attention_math``, had it first)."""
    advice = advise_scene(tmp_path, "attention-math-fallback", True)
    assert "no-tensor-cores" not in rules_of(advice)
    f = next(f for f in advice.findings if f.rule == "attention-math-fallback")
    assert f.evidence["kernels_per_step"] == 2 and f.evidence["dtype"] == "fp16"


def test_launch_bound_names_graphs_when_the_ops_around_short_kernels_hold_the_host(tmp_path: Path) -> None:
    """Eager small-batch inference: 160 ops a step, each 40 µs of dispatch around an 8 µs launch of a
    5 µs kernel, 20 µs of Python between them. The ops outweigh the launch calls, but a CUDA graph
    captures both (an H200 batch-32 MLP, ``r14/graphed_eager`` → ``graphed``: 33.5 → 10.6 ms a step),
    so the change is graphs / compile, not "less host work" (which it was while launch calls had to
    outweigh the ops)."""
    f = _launch_bound_of_ops(tmp_path, "aten::linear", calls=160, every_us=60, op_us=40, launch_at_us=16, launch_us=8)
    host = f.evidence["host_path_pct"]
    assert isinstance(host, dict) and host["host_ops"] > host["launch"]
    assert f.change.key == "cuda-graphs-or-compile"


def test_a_cpu_op_asking_the_runtime_a_question_launches_nothing(tmp_path: Path) -> None:
    """The ``heavy-host-op-no-gpu`` scene with ``cudaStreamIsCapturing`` and ``cudaGetDevice`` inside
    the 3 ms CPU op (a CPU ``Adam`` step checks whether a graph is being captured): runtime calls
    that launch no device work do not make the op a launching one — an H200 capture's 24 ms CPU
    optimizer step (``r14/cpu_adam``) had no finding, and graph capture's replay removed it."""
    b = TraceBuilder()
    SCENES["heavy-host-op-no-gpu"](b, True)
    for t in range(0, 30_000, 10_000):
        b.op("cudaStreamIsCapturing", ts=t + 4_200, dur=1, cat=b.RUNTIME_CAT)
        b.op("cudaGetDevice", ts=t + 4_300, dur=1, cat=b.RUNTIME_CAT)
    advice = run_advisor(analyze(b.load(tmp_path)))
    (f,) = [f for f in advice.findings if f.rule == "heavy-host-op-no-gpu"]
    assert f.est_gain_ms == pytest.approx(EXPECTED_GAIN_MS["heavy-host-op-no-gpu"], abs=0.01)


def test_the_replayed_remedies_use_the_advisors_defaults() -> None:
    """cudnn-benchmark-off replays its remedy only while ``cudnn_benchmark_gain`` is the default: the
    remedy's own share (``whatif.remedies.CUDNN_BENCHMARK_GAIN``) must be that default, or every trace
    would silently fall back to the first-order estimate; likewise the fused optimizer's factor and the
    kernel remedies' (under-filled grids, misaligned GEMMs)."""
    from stepscope.advisor.config import AdvisorConfig
    from stepscope.analysis import convolutions as conv
    from stepscope.analysis.whatif import kernel_remedies as kr
    from stepscope.analysis.whatif.host_work import HOST_OP_MIN_PCT
    from stepscope.analysis.whatif.remedies import CUDNN_BENCHMARK_GAIN
    from stepscope.analysis.whatif.transforms import FUSED_OPTIMIZER_FACTOR

    cfg = AdvisorConfig()
    assert cfg.cudnn_benchmark_gain == CUDNN_BENCHMARK_GAIN
    assert abs(FUSED_OPTIMIZER_FACTOR * cfg.optimizer_fused_speedup - 1) < 1e-12
    assert (cfg.underfill_min_kernel_us, cfg.underfill_recoverable) == (kr.UNDERFILL_MIN_KERNEL_US,
                                                                        kr.UNDERFILL_RECOVERABLE)
    assert (cfg.gemm_align, cfg.gemm_misaligned_recoverable) == (kr.GEMM_ALIGN, kr.GEMM_MISALIGNED_RECOVERABLE)
    assert cfg.host_op_min_pct == HOST_OP_MIN_PCT
    assert (cfg.conv_search_min_kernels, cfg.conv_search_over_median) == (conv.CONV_SEARCH_MIN_KERNELS,
                                                                          conv.CONV_SEARCH_OVER_MEDIAN)


def test_a_rule_set_off_its_remedys_defaults_weighs_its_kernels_on_the_path(tmp_path: Path) -> None:
    """gemm-dims with another recoverable share than its remedy's 0.5 is not replayed: the misaligned GEMM's
    6 ms × 0.4 × the share of its time on the critical path (the host syncs on it: all of it). The share had
    been left out (no ``pad-gemms`` kernel set: weighed by 1 whatever bound the step)."""
    from stepscope.advisor.config import AdvisorConfig

    b = TraceBuilder()
    SCENES["gemm-dims-not-multiple-of-8"](b, True)
    advice = run_advisor(analyze(b.load(tmp_path)), AdvisorConfig(gemm_misaligned_recoverable=0.4))
    (f,) = [f for f in advice.findings if f.rule == "gemm-dims-not-multiple-of-8"]
    assert f.basis == "misaligned-share" and f.evidence["on_path_pct"] == pytest.approx(100.0, abs=0.5)
    assert f.est_gain_ms == pytest.approx(6.0 * 0.4 * f.evidence["on_path_pct"] / 100, abs=0.01)


def test_a_search_set_off_its_remedys_defaults_counts_the_calls_time_once(tmp_path: Path) -> None:
    """conv-algo-search with another kernel count than its remedy's is not replayed: the larger of the 14 trials'
    time beyond one (14 x 0.4 x 13/14 ms) and the 7 ms call's host time beyond a call that did not search (none
    did: 1/14 of it), not their sum — the host's time holds its waits for the trials."""
    from stepscope.advisor.config import AdvisorConfig

    b = TraceBuilder()
    SCENES["conv-algo-search"](b, True)
    advice = run_advisor(analyze(b.load(tmp_path)), AdvisorConfig(conv_search_min_kernels=10))
    (f,) = [f for f in advice.findings if f.rule == "conv-algo-search"]
    assert f.basis == "search-time"
    assert f.evidence["search_ms"] == pytest.approx(14 * 0.4 * 13 / 14, abs=0.01)
    assert f.evidence["search_host_ms"] == pytest.approx(7.0 * 13 / 14, abs=0.01)
    assert f.est_gain_ms == pytest.approx(7.0 * 13 / 14, abs=0.01)
