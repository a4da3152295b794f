"""A cache grown by concatenation (stepscope/analysis/kv_cache.py): micro traces, µs, hand-computed, and
Hugging Face GPT-2 ``generate`` on an H200 (tests/data/h200_models/gpt2_generate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope import load
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.analysis.kv_cache import compute_kv_cache
from stepscope.report import texts
from tests.builders import TraceBuilder

GPT2 = Path(__file__).resolve().parents[2] / "data" / "h200_models" / "gpt2_generate"


def decode_trace(lengths: range, grow: bool = True) -> TraceBuilder:
    """Two 10 ms CPU steps; in each, one ``aten::cat`` of 20 µs per length: [1, 4, L, 64] + [1, 4, 1, 64]
    (``grow``), or always [1, 4, 16, 64] + [1, 4, 1, 64]."""
    b = TraceBuilder(device=None)
    for i in range(2):
        t = i * 10_000
        b.step(i + 1, t, 10_000)
        for k, length in enumerate(lengths):
            cached = length if grow else 16
            b.op("aten::cat", ts=t + 100 * k, dur=20, **{"Input Dims": [[[1, 4, cached, 64], [1, 4, 1, 64]], []],
                                                          "Input type": ["TensorList", "Scalar"]})
    return b


def test_a_cache_that_grows_a_position_a_call_is_found(tmp_path: Path) -> None:
    """Lengths 16..31 (16 of them, at least 8), twice: one family, 16 calls and 320 µs a step."""
    kv = compute_kv_cache(decode_trace(range(16, 32)).load(tmp_path), 0)
    assert (kv.families, kv.step_count, kv.calls_per_step, kv.host_ns) == (1, 2, 16.0, 2 * 16 * 20_000)
    assert (kv.shortest, kv.longest, kv.cache_shape, kv.device_ns) == (16, 31, "1 × 4 × 31 × 64", 0)


def test_a_cat_of_fixed_shapes_or_few_lengths_is_no_cache(tmp_path: Path) -> None:
    """The same shapes every call, or 7 lengths (under 8): no growing cache."""
    with pytest.raises(NotApplicable):
        compute_kv_cache(decode_trace(range(16, 32), grow=False).load(tmp_path), 0)
    with pytest.raises(NotApplicable):
        compute_kv_cache(decode_trace(range(16, 23)).load(tmp_path, "few.json"), 0)


def test_hugging_face_generate_grows_its_cache_and_launch_bound_says_so() -> None:
    """GPT-2's keys and values, [1, 12, L, 64], and the generated ids, [1, L]: two families, lengths 64-95;
    the launch-bound change (graph capture) says a graph needs the cache preallocated."""
    trace = load(GPT2)
    kv = compute_kv_cache(trace, 0)
    assert (kv.families, kv.shortest, kv.longest, kv.cache_shape) == (2, 64, 95, "1 × 12 × 94 × 64")
    lb = next(f for f in run_advisor(analyze(trace)).findings if f.rule == "launch-bound")
    text = texts.change_text(lb)
    assert "a 1 × 12 × 94 × 64 tensor grows by one position a call by torch.cat" in text
    assert "cache_implementation='static'" in text and "lengths 64-95" in text
