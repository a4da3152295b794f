"""The evidence analyses on the advisor's micro scenes (tests/unit/advisor/scenes.py): each gives the
numbers its rule's finding cites, and says why it does not apply where it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.caching_allocator import compute_caching_allocator
from stepscope.analysis.convolutions import compute_convolutions
from stepscope.analysis.dataloader import compute_dataloader
from stepscope.analysis.gemm_dims import compute_gemm_dims, gemm_nk
from stepscope.analysis.host_ops import compute_host_ops
from stepscope.analysis.input_shapes import compute_input_shapes
from stepscope.analysis.software import compute_software, cuda_version
from stepscope.analysis.tensor_cores import compute_tensor_cores
from stepscope.analysis.zero_grad import compute_zero_grad
from stepscope.model.trace import Trace
from tests.builders import V100, TraceBuilder
from tests.unit.advisor.scenes import GIB, SCENES, gemm, steps


def scene(tmp_path: Path, rule: str, on: bool = True) -> Trace:
    b = TraceBuilder()
    SCENES[rule](b, on)
    return b.load(tmp_path, f"{rule}-{on}.json")


def test_dataloader_events(tmp_path: Path) -> None:
    r = compute_dataloader(scene(tmp_path, "dataloader-bound"), 0)  # 3 steps, a 4 ms DataLoader call each
    assert r.step_count == 3 and r.loading == "single-process"
    assert r.calls.top() == [("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 3, 12_000_000.0)]
    with pytest.raises(NotApplicable, match="no DataLoader events"):
        compute_dataloader(scene(tmp_path, "launch-bound"), 0)


def test_tensor_cores(tmp_path: Path) -> None:
    r = compute_tensor_cores(scene(tmp_path, "no-tensor-cores"), 0)  # FP32 convolutions on a V100
    assert r.eligible_pct == pytest.approx(100.0) and r.tc_pct_of_eligible == 0.0
    assert r.non_tc_kernels.total_ns == r.kernel_ns == r.eligible_ns and r.device == "Tesla V100-SXM2-32GB"
    assert [n for n, _, _ in r.non_tc_ops.top()] == ["aten::cudnn_convolution"]
    old = TraceBuilder(device={**V100, "computeMajor": 6, "name": "Tesla P100"})
    SCENES["no-tensor-cores"](old, True)
    with pytest.raises(NotApplicable, match="Tesla P100 has no Tensor Cores"):
        compute_tensor_cores(old.load(tmp_path, "p100.json"), 0)


def test_convolutions(tmp_path: Path) -> None:
    r = compute_convolutions(scene(tmp_path, "channels-last"), 0)  # per step: a 0.7 ms nchwToNhwc + a 6 ms NCHW conv
    assert r.step_count == 3 and r.conv_pct == pytest.approx(100.0)
    assert (r.transforms.total_ns, r.tc_conv.total_ns, r.nchw_tc.total_ns) == (2_100_000, 18_000_000, 18_000_000)
    assert len(r.fallback) == 0 and r.calls.kernels.tolist() == [2, 2, 2]
    c = compute_convolutions(scene(tmp_path, "conv-algo-search"), 0).calls  # 14 kernels per call, every step
    assert c.kernels.tolist() == [14] * 3 and c.typical_kernels.tolist() == [14.0] * 3
    assert c.step.tolist() == [1, 2, 3] and c.names == ("aten::cudnn_convolution",)
    assert c.searching(12, 3.0).all() and not c.searching(15, 3.0).any()
    assert c.search_ns(c.searching(12, 3.0)) == pytest.approx(3 * 14 * 400_000 * (1 - 1 / 14))
    fb = compute_convolutions(scene(tmp_path, "cudnn-benchmark-off"), 0)
    assert fb.fallback_pct == pytest.approx(100.0) and fb.fallback.top()[0][1] == 3
    with pytest.raises(NotApplicable, match="no convolution kernels"):
        compute_convolutions(scene(tmp_path, "launch-bound"), 0)


def test_gemm_dims(tmp_path: Path) -> None:
    r = compute_gemm_dims(scene(tmp_path, "gemm-dims-not-multiple-of-8"), 0)  # fp16 [64,1001] x [1001,30]
    (s,) = r.shapes()
    assert (s.op, s.dims, s.n, s.k, s.half, s.calls, s.kernel_ns) == (
        "aten::mm", "[[64,1001],[1001,30]]", 30, 1001, True, 3, 18_000_000)
    assert r.kernel_ns == 18_000_000 and r.compute_major == 7
    assert r.misaligned(8).tolist() == [True] * 3 and not r.misaligned(1).any()
    assert gemm_nk("aten::linear", "[[1,141,512],[30522,512],[30522]]") == (30522, 512)
    assert gemm_nk("aten::addmm", "[[30], [64, 1001], [1001, 30]]") == (30, 1001)
    assert gemm_nk("aten::mm", "[[[1], [2]], [[3]]]") is None and gemm_nk("aten::mm", "not json") is None
    with pytest.raises(NotApplicable, match="record_shapes=True"):
        compute_gemm_dims(scene(tmp_path, "launch-bound"), 0)


def test_gemm_dims_count_each_gemm_once(tmp_path: Path) -> None:
    """Per step, ``aten::linear`` calls ``aten::addmm`` (6 ms kernel, fp16, N = 30 misaligned) and
    ``aten::matmul`` calls ``aten::mm`` (2 ms kernel, fp16, aligned): two GEMMs, each counted once at
    the op that launches its kernel; the outer ops add no call and no second example shape."""
    b = TraceBuilder()
    half = {"Input type": ["c10::Half", "c10::Half", "c10::Half"]}
    for t in steps(b):
        b.op("aten::linear", ts=t + 10, dur=100, **{"Input Dims": [[64, 1001], [30, 1001], [30]]}, **half)
        gemm(b, t + 20, dur=6_000, name="volta_h884gemm_64x64_nn", op="aten::addmm",
             **{"Input Dims": [[30], [64, 1001], [1001, 30], [], []]}, **half)
        b.op("aten::matmul", ts=t + 200, dur=100, **{"Input Dims": [[64, 1024], [1024, 32]]}, **half)
        gemm(b, t + 210, dur=2_000, name="volta_h884gemm_64x64_nn", **{"Input Dims": [[64, 1024], [1024, 32]]},
             **half)
    r = compute_gemm_dims(b.load(tmp_path), 0)
    assert len(r.op) == 6 and r.ops == ("aten::addmm", "aten::mm")  # 2 GEMMs x 3 steps, was 12 with the outer ops
    assert [(s.op, s.calls, s.kernel_ns) for s in r.shapes()] == [("aten::addmm", 3, 18_000_000),
                                                                  ("aten::mm", 3, 6_000_000)]
    advice = run_advisor(analyze(b.load(tmp_path, "again.json")))
    (f,) = [f for f in advice.findings if f.rule == "gemm-dims-not-multiple-of-8"]
    assert f.evidence["misaligned_calls"] == 3 and f.evidence["example_shapes"] == ["[[30],[64,1001],[1001,30],[],[]]"]
    assert f.evidence["misaligned_kernel_pct"] == pytest.approx(75.0)  # 18 of 24 ms


def test_host_ops(tmp_path: Path) -> None:
    r = compute_host_ops(scene(tmp_path, "heavy-host-op-no-gpu"), 0)
    (i,) = [j for j, name in enumerate(r.names) if name == "compute_metrics"]
    assert r.calls[i] == 3 and r.gpu_idle_ns[i] == pytest.approx(9_000_000.0)  # 3 ms per step, GPU idle
    assert r.by_idle()[0] == i
    # without step markers the whole trace is one window: the top-level ops are those under no other op
    b = TraceBuilder()
    b.op("aten::mm", ts=0, dur=20)
    b.launch_kernel("k", launch_ts=5, launch_dur=1, ts=10, dur=1_000)
    b.op("compute_metrics", ts=1_100, dur=3_000)
    b.op("aten::sort", ts=1_200, dur=500)  # inside compute_metrics: not top-level
    b.op("aten::add", ts=4_200, dur=20)
    b.launch_kernel("k", launch_ts=4_205, launch_dur=1, ts=4_210, dur=1_000)
    r = compute_host_ops(b.load(tmp_path, "nosteps.json"), 0)
    assert r.step_count == 0 and r.names == ("compute_metrics",)
    assert r.calls.tolist() == [1] and r.gpu_idle_ns.tolist() == [3_000_000.0]


def test_zero_grad(tmp_path: Path) -> None:
    r = compute_zero_grad(scene(tmp_path, "zero-grad-not-none"), 0)  # 10 fill kernels of 40 µs per step
    assert r.step_count == 3 and len(r.activities) == 30 and r.activities.total_ns == 1_200_000
    with pytest.raises(NotApplicable, match=r"Optimizer\.zero_grad"):
        compute_zero_grad(scene(tmp_path, "zero-grad-not-none", on=False), 0)


def test_caching_allocator(tmp_path: Path) -> None:
    r = compute_caching_allocator(scene(tmp_path, "allocator-fragmentation"), 0)
    reserved, alloc = r.at_reserved_peak
    assert r.has_memory_events and (int(reserved), int(alloc)) == (8 * GIB, 2 * GIB)
    assert r.device_memory_bytes == V100["totalGlobalMem"] and len(r.calls) == 0
    cpu = compute_caching_allocator(scene(tmp_path, "launch-bound"), 0)  # no memory events: computed all the same
    assert not cpu.has_memory_events and len(cpu.calls) == 0


def test_input_shapes(tmp_path: Path) -> None:
    r = compute_input_shapes(scene(tmp_path, "variable-input-shapes"), 0)  # aten::mm on [100|113|126, 512]
    assert (r.step_count, r.calls, r.varying_calls, r.varying_pct) == (3, 3, 3, 100.0)
    assert r.example_op == "aten::mm" and r.example_shapes == ("[[100,512],[512,512]]", "[[113,512],[512,512]]",
                                                               "[[126,512],[512,512]]")
    assert r.varying_ops.name == ["aten::mm"] and r.varying_ops.shapes.tolist() == [3]
    still = compute_input_shapes(scene(tmp_path, "variable-input-shapes", on=False), 0)
    assert still.varying_calls == 0 and still.example_op is None
    with pytest.raises(NotApplicable, match="record_shapes=True"):
        compute_input_shapes(scene(tmp_path, "launch-bound"), 0)


def test_software(tmp_path: Path) -> None:
    r = compute_software(scene(tmp_path, "outdated-software"), 0)
    assert (r.cuda_runtime, r.cuda_driver) == ((10, 2), (12, 9)) and r.has_versions and r.pytorch and not r.compiled
    bare = compute_software(scene(tmp_path, "launch-bound"), 0)
    assert (bare.cuda_runtime, bare.cuda_driver, bare.legacy_schema, bare.has_versions) == (None, None, False, False)
    assert cuda_version(12040) == (12, 4) and cuda_version("x") is None and cuda_version(0) is None
