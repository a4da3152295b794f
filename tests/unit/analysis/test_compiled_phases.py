"""torch.compile kernels and inference phases on hand-made traces (times in µs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.compiled import compute_compiled, decode_kernel
from stepscope.analysis.phases import compute_phases, parse_step
from tests.builders import TraceBuilder

US = 1000


@pytest.mark.parametrize(("name", "want"), [
    ("triton_poi_fused_add_mul_0", ("pointwise", ("add", "mul"))),
    ("triton_red_fused__to_copy_sum_1", ("reduction", ("_to_copy", "sum"))),
    ("triton_per_fused_native_layer_norm_12", ("persistent reduction", ("native_layer_norm",))),
    ("triton_tem_fused_addmm_0", ("template", ("addmm",))),
    ("triton_poi_fused_constant_pad_nd_moe_forward_0", ("pointwise", ("constant_pad_nd", "moe_forward"))),
    ("triton_poi_fused_0", ("pointwise", ())),
    ("sgemm_128x64", None),
])
def test_decode_kernel_name(name: str, want: tuple[str, tuple[str, ...]] | None) -> None:
    assert decode_kernel(name) == want


def test_compiled_graph_groups_its_kernels(tmp_path: Path) -> None:
    """Step [0, 300]. Inside ``## Call CompiledFxGraph abc ##`` [0, 100]: the Triton op launches
    triton_poi_fused_add_mul_0 (30 µs) and aten::mm launches sgemm (50 µs); outside it, a second Triton
    kernel (20 µs). The graph: 1 call, 2 kernels (1 Triton), 80 µs = 80 / 300 of the step; Triton:
    2 kernels, 50 of 100 µs of device time, both launched inside an op of their own name."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=300)
    b.op("## Call CompiledFxGraph abc ##", ts=0, dur=100, cat="user_annotation")
    b.op("triton_poi_fused_add_mul_0", ts=10, dur=10, kernel_backend="triton")
    b.launch_kernel("triton_poi_fused_add_mul_0", launch_ts=12, launch_dur=2, ts=20, dur=30)
    b.op("aten::mm", ts=30, dur=10)
    b.launch_kernel("sgemm", launch_ts=32, launch_dur=2, ts=60, dur=50)
    b.op("triton_red_fused__to_copy_sum_1", ts=200, dur=10)
    b.launch_kernel("triton_red_fused__to_copy_sum_1", launch_ts=202, launch_dur=2, ts=220, dur=20)
    r = compute_compiled(b.load(tmp_path), 0)
    assert (len(r.triton), r.triton.total_ns, r.triton_launch_op, r.device_ns) == (2, 50 * US, 2, 100 * US)
    assert r.triton_pct == pytest.approx(50.0)
    g = r.graphs
    assert g.name == ("CompiledFxGraph abc",)
    assert (g.calls.tolist(), g.kernels.tolist(), g.triton_kernels.tolist()) == ([1], [2], [1])
    assert g.device_ns.tolist() == [80 * US] and g.step_share_pct[0] == pytest.approx(100 * 80 / 300)
    kinds = dict(zip(r.triton.names, r.triton_kinds))
    assert kinds == {"triton_poi_fused_add_mul_0": "pointwise", "triton_red_fused__to_copy_sum_1": "reduction"}


def test_no_compiled_work_is_not_applicable(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("sgemm", launch_ts=1, launch_dur=2, ts=10, dur=5)
    with pytest.raises(NotApplicable):
        compute_compiled(b.load(tmp_path), 0)


def _execute(ctx: int, ctx_q: int, gen: int, gen_q: int) -> str:
    return (f"execute_{ctx_q + gen_q}_context_{ctx}(sq{ctx_q}sk{ctx_q}sqsq0sqsk0)"
            f"_generation_{gen}(sq{gen_q}sk99sqsq0sqsk0)")


def test_parse_vllm_and_named_steps() -> None:
    assert parse_step(_execute(2, 8, 0, 0)) == ("prefill", 2, 8, 0, 0)
    assert parse_step(_execute(0, 0, 3, 3)) == ("decode", 0, 0, 3, 3)
    assert parse_step(_execute(1, 7, 3, 3)) == ("mixed", 1, 7, 3, 3)
    assert parse_step("llm.decode_step") == ("decode", -1, -1, -1, -1)
    assert parse_step("execute_model") is None and parse_step("decoder_layer") is None


def test_vllm_prefill_and_decode_steps(tmp_path: Path) -> None:
    """Prefill [0, 100] (2 requests, 8 tokens) launches a 40 µs kernel at [50, 90]: span 40 µs, 5 µs per
    token. Decode [200, 250] (2 tokens) runs [210, 220] and [225, 245] (span 35), decode [300, 350]
    (2 tokens) runs [320, 330] (span 10): 4 tokens, 45 µs, 11.25 µs per token; the second decode's
    time runs to its range's end (350 − 300 = 50 µs)."""
    b = TraceBuilder()
    b.op(_execute(2, 8, 0, 0), ts=0, dur=100, cat="user_annotation")
    b.launch_kernel("k", launch_ts=10, launch_dur=2, ts=50, dur=40)
    b.op(_execute(0, 0, 2, 2), ts=200, dur=50, cat="user_annotation")
    b.launch_kernel("k", launch_ts=201, launch_dur=2, ts=210, dur=10)
    b.launch_kernel("k", launch_ts=204, launch_dur=2, ts=225, dur=20)
    b.op(_execute(0, 0, 2, 2), ts=300, dur=50, cat="user_annotation")
    b.launch_kernel("k", launch_ts=301, launch_dur=2, ts=320, dur=10)
    r = compute_phases(b.load(tmp_path), 0)
    s = r.steps
    assert (r.source, s.phase) == ("vllm", ("prefill", "decode", "decode"))
    assert s.device_span_ns.tolist() == [40 * US, 35 * US, 10 * US]
    assert s.device_ns.tolist() == [40 * US, 30 * US, 10 * US] and s.kernels.tolist() == [1, 2, 1]
    assert s.time_ns.tolist() == [100 * US, 50 * US, 50 * US]
    assert (r.tokens("prefill"), r.tokens("decode"), r.tokens("mixed")) == (8, 4, -1)
    assert r.per_token_ns("prefill") == pytest.approx(5 * US)
    assert r.per_token_ns("decode") == pytest.approx(11.25 * US)


def test_no_phase_annotation_says_so(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("execute_model", ts=0, dur=100, cat="user_annotation")
    b.launch_kernel("k", launch_ts=10, launch_dur=2, ts=50, dur=40)
    with pytest.raises(NotApplicable, match="does not show its inference phases"):
        compute_phases(b.load(tmp_path), 0)
