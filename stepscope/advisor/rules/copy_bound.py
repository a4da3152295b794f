"""``copy-bound``: host↔device copies hold the step's critical path (Nsight's memcpy rules; the
verdict's ``copy`` bound), whatever memory they come from.

Detects: the host-device copies' time on the critical path (the critical_path analysis' ``copy``
part, times the host-device copies' share of all copy time in the steps: device-to-device copies are
not this rule's) is at least ``copy_bound_min_pct`` of the step. Pinned copies already run near the link's bandwidth (an
H200's PCIe: ~55 GB/s), so making them faster is not the change; ``pageable-memcpy`` weighs pinning
where they are pageable.

Gain: what overlapping them can take off the step at most — per step, the smaller of the copies'
and the compute's time on the path (copies on a side stream run under the compute, not under each
other), for the share of the copied bytes issued on a stream that also runs kernels (ordered with
them: copies already on a stream of their own are overlapped as far as their data allows). Beyond
that only fewer bytes help, which the finding says with the bytes moved. Measured on an H200
(``tests/data/h200_bounds/r13``: 512 MB each way a step, pinned, on the compute stream, around 2.2 ms
of GEMMs): gain 2.15 ms, the step 21.59 → 19.44 ms predicted, 20.16 ms measured with the copies on a
side stream (``offload_side``, where the finding's gain is 0: −3.6 %).
"""

from __future__ import annotations

import numpy as np

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, per_step
from stepscope.analysis.critical_path import PARTS
from stepscope.analysis.registry import CRITICAL_PATH, MEMCPY

RULE_ID = "copy-bound"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("copy",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # copies come with the host timeline: not run on a summary-only trace
GB = 1e9


def detect(ctx: RuleContext) -> list[Finding]:
    cp = ctx.result(CRITICAL_PATH)
    hd = ctx.result(MEMCPY).host_device
    nbytes, dur = hd.bytes_total, hd.dur_ns
    # the path's copy part holds device-to-device copies too: only the host-device share is this rule's
    host_share = dur / hd.all_copies_ns if hd.all_copies_ns > 0 else 0.0
    copy_ns = cp.parts_ns[:, PARTS.index("copy")].astype(np.float64) * host_share
    compute_ns = cp.parts_ns[:, PARTS.index("compute")].astype(np.float64)
    copy_step = per_step(ctx, float(copy_ns.sum()))
    if ctx.pct_of_step(copy_step) < ctx.cfg.copy_bound_min_pct:  # the steps, or the whole trace as one window
        return []
    ordered = hd.ordered_bytes / nbytes if nbytes > 0 else 1.0
    gain = per_step(ctx, float(np.minimum(copy_ns, compute_ns).sum())) * ordered
    evidence = {"copy_on_path_ms": ms(copy_step), "copy_on_path_pct": round(ctx.pct_of_step(copy_step), 1),
                "compute_on_path_ms": ms(per_step(ctx, float(compute_ns.sum()))),
                "gb_per_step": round(per_step(ctx, nbytes) / GB, 3),
                "gb_per_s": round(nbytes / dur, 1) if dur > 0 else None,
                "pinned_pct": round(100.0 * hd.pinned_bytes / nbytes, 1) if nbytes > 0 else None,
                "on_compute_stream_pct": round(100.0 * ordered, 1)}
    return [ctx.finding(RULE_ID, gain, "overlap-bound", evidence, Change("overlap-or-avoid-copies", {}))]
