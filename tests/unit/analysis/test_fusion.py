"""Fusion candidates: frequent short-kernel sequences, optimizer kernel make-up."""

from __future__ import annotations

from pathlib import Path

from stepscope.analysis.fusion import compute_fusion
from tests.builders import TraceBuilder


def test_frequent_short_sequences(tmp_path: Path) -> None:
    """a b c a b c a (2 µs each) then a long kernel: triples abc ×2, bca ×2, cab ×1 (the long one breaks runs)."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    for i, name in enumerate("abcabca"):
        b.launch_kernel(name, launch_ts=i, launch_dur=0.5, ts=10 + 3 * i, dur=2)
    b.launch_kernel("long", launch_ts=8, launch_dur=0.5, ts=40, dur=50)
    r = compute_fusion(b.load(tmp_path), 0, length=3, min_count=2)
    assert (r.short_kernel_count, r.kernel_count) == (7, 8)
    assert sorted(zip(r.sequences.names, r.sequences.count.tolist(), r.sequences.time_ns.tolist())) == [
        (("a", "b", "c"), 2, 12_000), (("b", "c", "a"), 2, 12_000)]
    assert r.optimizer.verdict == "none"


def optimizer(tmp_path: Path, kernel: str, n: int):  # type: ignore[no-untyped-def]
    b = TraceBuilder()
    b.step(1, ts=0, dur=500)
    b.op("Optimizer.step#SGD.step", ts=100, dur=300, cat="user_annotation")
    for i in range(n):
        b.launch_kernel(kernel, launch_ts=101 + 10 * i, launch_dur=2, ts=105 + 10 * i, dur=3)
    b.launch_kernel(kernel, launch_ts=450, launch_dur=2, ts=455, dur=3)  # after the optimizer: not counted
    return compute_fusion(b.load(tmp_path), 0).optimizer


def test_optimizer_of_many_small_elementwise_kernels(tmp_path: Path) -> None:
    o = optimizer(tmp_path, "void at::native::vectorized_elementwise_kernel<4, add>", 25)
    assert (o.step_count, o.kernel_count, o.elementwise_count, o.foreach_count) == (1, 25, 25, 0)
    assert o.kernels_per_step == 25
    assert o.verdict == "many-small-kernels"
    assert o.name == "SGD"  # from Optimizer.step#SGD.step
    assert o.kernels.top() == [("void at::native::vectorized_elementwise_kernel<4, add>", 25, 75_000.0)]


def test_foreach_optimizer(tmp_path: Path) -> None:
    o = optimizer(tmp_path, "void at::native::multi_tensor_apply_kernel<TensorListMetadata<3>>", 4)
    assert (o.kernel_count, o.foreach_count, o.verdict) == (4, 4, "foreach-or-fused")
