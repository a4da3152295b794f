"""Hand-made SPEC §12 documents for the renderer tests (numbers a reader can check by eye).

The analysis document mirrors the TensorBoard plugin's gold numbers for resnet50 num_workers=0
(kineto_tb_plugin/expected), with hostile names added to test escaping.
"""

from __future__ import annotations

from typing import Any

EVIL = '<script>alert("x")</script>'
KERNEL_TPL = ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
              "at::detail::Array<char*, 3> >")

STEPS_US = [
    ("5", 98598, 1941, 90, 2796, 69317, 14091, 1115),
    ("6", 98570, 1947, 89, 2762, 57669, 12968, 1148),
    ("7", 98596, 1931, 91, 2877, 61257, 13768, 1213),
    ("8", 98623, 1938, 89, 2841, 56453, 13420, 1200),
    ("9", 98504, 1937, 87, 2788, 62690, 15025, 1141),
    ("10", 98641, 1798, 88, 3381, 48185, 12773, 1117),
]
KEYS = ("kernel", "memcpy", "memset", "runtime", "dataloader", "cpu_exec", "other")


def _bd(vals: tuple[int, ...]) -> dict[str, float]:
    bd = {k: v / 1000 for k, v in zip(KEYS, vals)}
    bd["communication"] = 0.0
    return bd


def steps() -> list[dict[str, Any]]:
    out = []
    for name, *vals in STEPS_US:
        bd = _bd(tuple(vals))
        out.append({"step": name, "total_ms": sum(bd.values()), "breakdown_ms": bd})
    return out


def rank_doc(rank: int = 0, *, distributed: bool = False) -> dict[str, Any]:
    st = steps()
    avg = {k: sum(s["breakdown_ms"][k] for s in st) / len(st) for k in st[0]["breakdown_ms"]}
    kernels = [
        {"name": "volta_scudnn_128x64_relu_interior_nn_v1", "calls": 204, "total_ms": 103.5, "mean_ms": 0.507},
        {"name": KERNEL_TPL, "calls": 1380, "total_ms": 61.2, "mean_ms": 0.044},
        {"name": EVIL, "calls": 3, "total_ms": 1.25, "mean_ms": 0.417},
    ] + [{"name": f"kernel_{i}", "calls": i + 1, "total_ms": 10.0 / (i + 1)} for i in range(80)]
    return {
        "rank": rank,
        "device": {"name": "Tesla V100-DGXS-32GB", "sm_count": 80, "total_memory_bytes": 34084028416,
                   "compute_capability": "7.0"},
        "overview": {"step_count": 6, "avg_step_ms": sum(avg.values()), "gpu_utilization_pct": 55.51,
                     "sm_efficiency_pct": 54.68, "achieved_occupancy_pct": 49.13, "tensor_core_pct": 0.0,
                     "breakdown_ms": avg},
        "steps": st,
        "gpu": {"busy_ms": 603.558, "span_ms": 996.477},
        "kernels": kernels,
        "operators": [
            {"name": "aten::cudnn_convolution", "calls": 318, "host_self_ms": 12.5, "device_self_ms": 300.1},
            {"name": "aten::add_<evil>", "calls": 10, "host_self_ms": 1.0, "device_self_ms": 2.0},
        ],
        "distributed": ({"computation_ms": 120.0 + rank, "communication_ms": 20.0, "overlap_ms": 8.0,
                         "other_ms": 30.0} if distributed else None),
        "idle": {"host_wait_ms": 60.0, "kernel_wait_ms": 5.0, "other_ms": 2.0},
        "memory": {"curves": [{"device": "GPU 0", "ts_ms": [float(i) for i in range(5000)],
                               "allocated_mb": [float(i % 1000) for i in range(5000)],
                               "reserved_mb": [1200.0] * 5000}]},
    }


def analysis_doc(*, findings: bool = True, ranks: int = 1) -> dict[str, Any]:
    fs = [
        {"rule": "dataloader-bound", "severity": "high", "rank": 0, "est_gain_ms": 52.1, "est_gain_pct": 29.3,
         "evidence": {"dataloader_ms_per_step": 59.262, "dataloader_pct": 33.37, "num_workers": 0,
                      "op": EVIL},
         "advice": "Set num_workers > 0 on the DataLoader (sized to the cores), with pin_memory=True."},
        {"rule": "no-tensor-cores", "severity": "medium", "rank": None, "est_gain_ms": 5.0, "est_gain_pct": 2.8,
         "evidence": {"fp32_gemm_ms": 40.2, "kernels": ["volta_sgemm_128x64_nn", "<b>bold</b>"]},
         "advice": "Use AMP (bf16/fp16) or TF32."},
    ]
    return {
        "schema_version": "1",
        "source": f"/traces/{EVIL}/worker0.pt.trace.json.gz",
        "ranks": [rank_doc(r, distributed=ranks > 1) for r in range(ranks)],
        "cluster": ({"rank_count": ranks, "slow_ranks": [1], "imbalance_pct": 12.5,
                     "arrivals": _arrivals(ranks), "slow_links": SLOW_LINKS} if ranks > 1 else None),
        "findings": fs if findings else [],
        "diagnostics": [{"name": "truncated-file", "severity": "error", "count": 12, "example": EVIL}],
    }


REMEDIES = [("loader-workers", 15.91, {"workers": 4}), ("drop-syncs", 37.96, {"drop_syncs": "."}),
            ("pinned-copies", 37.5, {"pin_copies": True}), ("graph-capture", 27.4, {"host_overhead": 0.0})]


def whatif_doc(ranks: int = 1) -> dict[str, Any]:
    """``analysis_doc`` with ``remedies`` on every rank; the first finding's gain replayed on the last rank."""
    doc = analysis_doc(ranks=ranks)
    for r in doc["ranks"]:
        shift = float(r["rank"])
        r["remedies"] = {"measured_mean_ms": 37.97 + shift, "remedies": [
            {"remedy": name, "basis": f"basis of {name} {EVIL}", "predicted_mean_ms": p + shift,
             "saved_ms": 37.97 - p, "options": opts} for name, p, opts in REMEDIES]}
    doc["findings"][0]["rank"] = ranks - 1
    doc["findings"][0]["evidence"]["whatif_remedy"] = "loader-workers"
    doc["findings"][0]["basis"] = "every step replayed with the change (...)"
    return doc


def diff_doc(*, gate_passed: bool | None = True) -> dict[str, Any]:
    overall = [
        {"category": "step", "base_ms": 177.6, "new_ms": 141.1, "diff_ms": -36.5},
        {"category": "kernel", "base_ms": 98.6, "new_ms": 99.1, "diff_ms": 0.5},
        {"category": "dataloader", "base_ms": 59.3, "new_ms": 1.2, "diff_ms": -58.1},
        {"category": "cpu_exec", "base_ms": 13.7, "new_ms": 14.0, "diff_ms": 0.3},
    ]
    doc: dict[str, Any] = {
        "schema_version": "1",
        "overall": overall,
        "operators": [{"name": f"op_{i}", "base_ms": 10.0, "new_ms": 10.0 + i - 50, "diff_ms": i - 50.0}
                      for i in range(100)],
        "kernels": [{"name": EVIL, "base_ms": 1.0, "new_ms": 3.0, "diff_ms": 2.0},
                    {"name": KERNEL_TPL, "base_ms": 5.0, "new_ms": 4.0, "diff_ms": -1.0}],
    }
    if gate_passed is not None:
        doc["gate"] = {"passed": gate_passed, "threshold_pct": 5.0, "slower_pct": -20.6 if gate_passed else 25.9}
    return doc


SLOW_LINKS = {"slow_fraction": 0.5, "links": [], "slow": [
    {"source": "collectives", "link": "group 2 (ranks 2, 3)", "kind": "allreduce", "ranks": [2, 3], "count": 1,
     "bytes": 8388608, "time_ms": 4.0, "bandwidth_gbps": 2.1, "class_median_gbps": 8.39, "slow": True}]}


def _arrivals(ranks: int) -> dict[str, Any]:
    """Rank 1 is the culprit (its compute), 2.5 ms late per step; the others wait for it."""
    return {"step_count": 1, "job_step_ms": 20.0, "tie_us": 10.0, "collective_count": 2,
            "victims": [0, 2, 3][:ranks - 1],
            "culprits": [{"rank": 1, "cause": "compute", "times_last": 2, "late_ms": 2.5, "in_trace_late_ms": 2.5,
                          "late_pct_of_step": 12.5, "cause_ms": {"compute": 2.4, "host": 0.1, "copy": 0.0}}],
            "ranks": [{"rank": r, "role": "culprit" if r == 1 else "victim", "times_last": 2 if r == 1 else 0,
                       "late_ms": 2.5 if r == 1 else 0.0, "wait_ms": 0.0 if r == 1 else 3.0,
                       "wait_on_culprits_ms": 0.0 if r == 1 else 2.5, "clock_offset_us": 0.0} for r in range(ranks)],
            "collectives": []}
