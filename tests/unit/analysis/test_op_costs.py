"""FLOPs and bytes from shapes, by hand: attention (causal, backward, GQA), convolutions (stride,
padding, dilation, groups, bias, backward), GEMMs (linear, matmul); and against the FLOPs PyTorch's
profiler recorded (tests/data/with_flops): equal on every op that has both, except the bias term
PyTorch leaves out (docs/roofline.md, "Recorded FLOPs")."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

import stepscope
from stepscope.analysis.op_costs import row_costs, shape_cost

FLOPS_TRACE = Path(__file__).parents[2] / "data" / "with_flops" / "ops.pt.trace.json.gz"
BF16, F32 = "c10::BFloat16", "float"


def cost(name: str, dims: list[object], types: list[str], concrete: list[str] | None = None) -> tuple[float, float]:
    c = shape_cost(name, json.dumps(dims), json.dumps(types), json.dumps(concrete) if concrete is not None else "")
    assert c is not None
    return c.flops, c.nbytes


def test_sdpa_forward_causal() -> None:
    qkv = [[2, 4, 128, 64]] * 3
    concrete = ["", "", "", "0.", "True", "False", ""]
    f, b = cost("aten::_scaled_dot_product_flash_attention", [*qkv, [], [], [], []], [BF16] * 3, concrete)
    assert f == 4 * 2 * 4 * 128 * 128 * 64 / 2  # QKᵀ and PV, 2·N²·d each, half of it under the mask
    assert b == 4 * 2 * 4 * 128 * 64 * 2  # Q, K, V, O in bf16
    f_full, _ = cost("aten::_scaled_dot_product_flash_attention", [*qkv, [], [], [], []], [BF16] * 3,
                     ["", "", "", "0.", "False", "False", ""])
    assert f_full == 2 * f


def test_sdpa_layouts_agree() -> None:
    """(B, H, N, d) for the aten SDPA ops, (B, N, H, d) for _flash_attention_forward and flash_attn."""
    bhnd = cost("aten::_scaled_dot_product_efficient_attention", [[1, 8, 100, 32]] * 3 + [[]] * 5, [F32] * 3,
                ["", "", "", "", "True", "0.", "False", ""])
    bnhd = cost("aten::_flash_attention_forward", [[1, 100, 8, 32]] * 3 + [[]] * 12, [F32] * 3,
                ["", "", "", "", "", "100", "100", "0.", "False", "False", ""])
    assert bhnd == bnhd == (4 * 8 * 100 * 100 * 32, 4 * 8 * 100 * 32 * 4)


def test_sdpa_backward_with_gqa() -> None:
    """Flash backward, 8 query heads over 2 key/value heads, not causal."""
    b_, hq, hkv, n, d = 2, 8, 2, 64, 32
    dims = [[b_, hq, n, d], [b_, hq, n, d], [b_, hkv, n, d], [b_, hkv, n, d], [b_, hq, n, d], [b_, hq, n]]
    concrete = [""] * 10 + ["0.", "False", "", "", ""]
    f, b = cost("aten::_scaled_dot_product_flash_attention_backward", dims + [[]] * 9, [BF16] * 6, concrete)
    # recompute QKᵀ, dV, dP, dQ, dK: five N×N×d products of 2 FLOPs; GQA sums dK, dV over 4 heads each
    assert f == b_ * hq * 5 * 2 * n * n * d + 2 * b_ * n * d * (hq // hkv - 1)
    assert b == (2 * b_ * hq * n * d + 2 * (b_ * hkv * n * d) * 2 + b_ * hq * n * d) * 2  # Q dO dQ, K V dK dV


def test_sdpa_causal_over_unequal_lengths_is_unknown() -> None:
    dims = [[1, 2, 10, 8], [1, 2, 20, 8], [1, 2, 20, 8], [], [], [], []]
    assert shape_cost("aten::_scaled_dot_product_flash_attention", json.dumps(dims), json.dumps([BF16] * 3),
                      json.dumps(["", "", "", "0.", "True", "False", ""])) is None


def test_conv_stride_padding_bias() -> None:
    """x [2, 3, 17, 19], w [8, 3, 3, 5], stride (2, 1), padding (1, 2): y [2, 8, 9, 19]."""
    f, b = cost("aten::conv2d", [[2, 3, 17, 19], [8, 3, 3, 5], [8], [], [], [], []], [F32] * 3,
                ["", "", "", "[2, 1]", "[1, 2]", "[1, 1]", "1"])
    y = 2 * 8 * 9 * 19
    assert f == 2 * y * 3 * 3 * 5 + y  # 2 FLOPs per weight element per output element, + the bias add
    assert b == (2 * 3 * 17 * 19 + 8 * 3 * 3 * 5 + 8 + y) * 4


def test_conv_dilation_groups_and_backward() -> None:
    f, _ = cost("aten::convolution", [[1, 8, 9, 9], [8, 2, 3, 3], [], [], [], [], [], [], []], [F32] * 2,
                ["", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "False", "[0, 0]", "4"])
    assert f == 2 * (8 * 9 * 9) * 2 * 3 * 3  # dilation 2, padding 2: 9×9 out; each output reads 2 of 8 channels
    bwd_dims = [[1, 8, 9, 9], [1, 8, 9, 9], [8, 2, 3, 3], [], [], [], [], [], [], [], []]
    fb, bb = cost("aten::convolution_backward", bwd_dims, [F32] * 3,
                  ["", "", "", "[8]", "[1, 1]", "[2, 2]", "[2, 2]", "False", "[0, 0]", "4", "[True, True, True]"])
    assert fb == 2 * f + 8 * 9 * 9  # input and weight gradients, + the bias gradient's sum
    assert bb == (2 * (648 + 144 + 648) + 648 + 8) * 4


def test_linear_and_matmul() -> None:
    f, b = cost("aten::linear", [[4, 10, 32], [16, 32], []], [BF16] * 2)
    assert (f, b) == (2 * 40 * 16 * 32, (40 * 32 + 16 * 32 + 40 * 16) * 2)
    f, b = cost("aten::matmul", [[3, 1, 5, 6], [4, 6, 7]], [F32] * 2)
    assert (f, b) == (2 * 12 * 5 * 7 * 6, (90 + 168 + 12 * 35) * 4)  # batch dims broadcast to 3×4


def _recorded() -> list[tuple[str, list[list[int]], float, float]]:
    """(name, input dims, recorded FLOPs, FLOPs from shapes) of every op of the with_flops trace with both."""
    t = stepscope.load(FLOPS_TRACE, use_cache=False)
    ev = t.events
    rows = np.flatnonzero(np.isfinite(ev["flops"]) & (ev["flops"] > 0))
    assert len(rows) == 24  # 12 counted ops × 2 iterations (tests/data/with_flops/capture.py)
    out = []
    for r in rows.tolist():  # the few recorded ops
        name, dims = t.strings[int(ev["name"][r])], t.strings[int(ev["input_dims"][r])]
        c = shape_cost(name, dims, t.strings[int(ev["input_types"][r])], t.strings[int(ev["concrete_inputs"][r])])
        out.append((name, json.loads(dims), float(ev["flops"][r]), c.flops if c is not None else math.nan))
    return out


def test_computed_flops_equal_the_recorded_ones_but_the_bias() -> None:
    seen = set()
    for name, dims, recorded, computed in _recorded():  # per recorded op
        seen.add(name)
        if name in ("aten::mul", "aten::add"):  # elementwise: PyTorch's count only, no shape formula here
            assert math.isnan(computed)
        elif name == "aten::addmm":  # PyTorch counts 2·M·N·K; TraceLens's model adds the bias, M·N
            assert computed - recorded == dims[1][0] * dims[2][1]
        elif name == "aten::baddbmm":
            assert computed - recorded == dims[1][0] * dims[1][1] * dims[2][2]
        elif name == "aten::conv2d" and dims[2]:  # with a bias: one add per output element
            assert computed - recorded == 2 * 8 * 9 * 19  # y = [2, 8, 9, 19] (stride 2, 1; padding 1, 2)
        else:
            assert computed == recorded, (name, dims)
    assert seen == {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::conv2d", "aten::mul", "aten::add"}


def test_recorded_flops_win_over_shapes() -> None:
    t = stepscope.load(FLOPS_TRACE, use_cache=False)
    ev = t.events
    rows = np.flatnonzero(t.strings.mask(lambda s: s in ("aten::addmm", "aten::mul"))[ev["name"]])
    rc = row_costs(t, rows)
    assert rc.recorded.all() and np.array_equal(rc.flops, ev["flops"][rows])
    mul = t.strings.decode(ev["name"][rows]) == "aten::mul"
    assert np.all(rc.nbytes[mul] == (32 * 64 * 4) * 2)  # x read, an x-sized output written (the scalar is no tensor)
