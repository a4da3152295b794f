"""Roofline against TraceLens on the TraceLens traces (SOURCES.md §4, §9): every row of
``SDPA_fwd.csv`` (calls equal; GFLOPs, data moved, FLOPs/byte, TFLOP/s and TB/s mean and median,
kernel time within 0.5 %), the Stable Diffusion run's ``CONV_fwd.csv`` FLOPs and bytes, and the
roofline of each trace: its device matched, MFU and coverage in range, every bound on the right
side of its ridge. Gold values are read from the gold CSVs, never copied from our output."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.analysis.common import rank_rows
from stepscope.analysis.op_costs import shape_cost
from stepscope.analysis.op_time import op_time
from stepscope.analysis.roofline import compute_roofline
from stepscope.model.schema import GPU_KINDS
from stepscope.model.trace import Trace

CASES = {"h100_bert_small_inference": "expected_perf_report_csvs",
         "h100_qwen1.5_0.5b_inference": "expected_perf_report_csvs",
         "mi300x_bert_small_inference": "expected_perf_report_csvs",
         "xdit_sd3.5_torch_compile_mi300x": "expected_perf_csvs"}
DEVICES = {"h100_bert_small_inference": "H100 SXM", "h100_qwen1.5_0.5b_inference": "H100 SXM",
           "mi300x_bert_small_inference": "MI300X", "xdit_sd3.5_torch_compile_mi300x": "MI300X"}
REL = 0.005
#: SDPA_fwd.csv column → our AttentionShapeTable column (scale)
SDPA_COLUMNS = {"GFLOPS_first": ("gflops", 1.0), "Data Moved (MB)_first": ("data_moved_mb", 1.0),
                "FLOPS/Byte_first": ("flops_per_byte", 1.0), "TFLOPS/s_mean": ("tflops_mean", 1.0),
                "TFLOPS/s_median": ("tflops_median", 1.0), "TB/s_mean": ("tbps_mean", 1.0),
                "TB/s_median": ("tbps_median", 1.0), "Kernel Time (µs)_sum": ("time_ns", 1e-3),
                "Kernel Time (µs)_median": ("median_time_ns", 1e-3)}


def _load(root: Path, case: str) -> Trace:
    return stepscope.load(root / "tracelens" / case, use_cache=False)


def _gold(root: Path, case: str, sheet: str) -> list[dict[str, str]]:
    with (root / "tracelens" / case / CASES[case] / sheet).open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("case", list(CASES))
def test_sdpa_rows_equal_tracelens(shared_traces: Path, case: str) -> None:
    a = compute_roofline(_load(shared_traces, case), 0).sdpa
    cols = a.columns()
    ours = {(str(n), int(b), int(nq), int(hq), int(nk), int(hk), int(dq), int(dv), bool(c)): i
            for i, (n, b, nq, hq, nk, hk, dq, dv, c) in enumerate(zip(
                a.name, a.b, a.n_q, a.h_q, a.n_kv, a.h_kv, a.d_qk, a.d_v, a.causal))}
    want = _gold(shared_traces, case, "SDPA_fwd.csv")
    assert len(want) == len(ours) and not a.backward.any()
    for row in want:
        key = (row["name"], *(int(row[f"param: {p}"]) for p in ("B", "N_Q", "H_Q", "N_KV", "H_KV", "d_h_qk",
                                                                "d_h_v")), row["param: causal"] == "True")
        i = ours[key]
        assert int(a.calls[i]) == int(row["name_count"]), key
        for gold_col, (col, scale) in SDPA_COLUMNS.items():
            assert float(cols[col][i]) * scale == pytest.approx(float(row[gold_col]), rel=REL), (key, gold_col)


def test_conv_flops_and_bytes_equal_tracelens(shared_traces: Path) -> None:
    """aten::convolution per shape: GFLOPs and data moved of CONV_fwd.csv. TraceLens sees no bias on
    aten::convolution (it expects three inputs, Kineto records nine), we add one FLOP per output
    element and the bias read: 1 / (2 · C_in · k²) of the FLOPs, inside the 0.5 %."""
    case = "xdit_sd3.5_torch_compile_mi300x"
    t = _load(shared_traces, case)
    ev, pool = t.events, t.strings
    rows = rank_rows(t, 0, tuple(int(k) for k in GPU_KINDS))
    ot = op_time(t, rows, pool.mask(lambda s: s == "aten::convolution")[ev["name"]])
    ours: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[float, float, int]] = {}
    for r in ot.op.tolist():  # per convolution call (a few dozen)
        dims = pool[int(ev["input_dims"][r])]
        c = shape_cost("aten::convolution", dims, pool[int(ev["input_types"][r])], pool[int(ev["concrete_inputs"][r])])
        assert c is not None
        x, w = (tuple(d) for d in json.loads(dims)[:2])
        n = ours.get((x, w), (0.0, 0.0, 0))[2]
        ours[(x, w)] = (c.flops, c.nbytes, n + 1)
    want = _gold(shared_traces, case, "CONV_fwd.csv")
    assert len(want) == len(ours)
    for row in want:
        key = (tuple(json.loads(row["param: input_shape"].replace("(", "[").replace(")", "]"))),
               tuple(json.loads(row["param: filter_shape"].replace("(", "[").replace(")", "]"))))
        flops, nbytes, calls = ours[key]
        assert calls == int(row["name_count"])
        assert flops / 1e9 == pytest.approx(float(row["GFLOPS_first"]), rel=REL)
        assert nbytes / 2**20 == pytest.approx(float(row["Data Moved (MB)_first"]), rel=REL)


@pytest.mark.parametrize("case", list(CASES))
def test_roofline_of_the_tracelens_traces(shared_traces: Path, case: str) -> None:
    v = compute_roofline(_load(shared_traces, case), 0)
    assert v.peak is not None and v.peak.name == DEVICES[case]
    assert 0 < v.mfu_pct < 100 and 0 < v.covered_pct <= 100
    o = v.ops
    known = o.bound != ""
    assert known.all()  # bf16 / fp32 ops: both have peaks on H100 and MI300X
    assert np.all((o.bound == "compute") == (o.intensity >= o.ridge))
    assert np.all(o.tflops <= o.peak_tflops) and np.all(o.roof_pct <= 100.0)
    assert v.kernels.gflops.sum() == pytest.approx((o.gflops * o.calls).sum(), rel=1e-9)
