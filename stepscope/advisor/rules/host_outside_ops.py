"""``host-outside-ops``: a CPU-only step spends its time outside every op the profiler recorded.

Detects: on a rank without a device (a CPU-only run), the critical path's *untraced* host part —
time on the step's path that no recorded op covers (:mod:`stepscope.analysis.host_traced`): the
loop's Python, I/O such as ``torch.save`` of a checkpoint or logging, garbage collection — is at least
``loop_code_min_pct`` of the step (decided on the mean over steps with the largest value aside from 4
steps on: one disturbed step does not make the finding, and code that runs every few steps — an epoch's
start — still does; the figures shown are the plain mean, the same as the replayed gain).
The operators view cannot show that time: no op holds it. On a rank with a device the same time is
``launch-bound``'s (its ``move-python-off-path`` change), where the GPU waits for it.

Gain: the ``move-loop-code`` what-if (:class:`~stepscope.analysis.whatif.loop_code.MoveLoopCode`): that
time taken off the step, replayed, so the DataLoader, collectives and ops keep theirs. Without the
replay: that mean untraced time per step.

The change: find the code (``with_stack=True`` names the lines; time it with ``time.perf_counter``)
and move it out of the step — checkpoints and logs every N steps or on a background thread,
``gc.freeze()`` after setup instead of a collection per step.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, replayed_saving
from stepscope.analysis.critical_path import HOST_PARTS
from stepscope.analysis.host_traced import in_short_gaps
from stepscope.analysis.registry import CRITICAL_PATH

RULE_ID = "host-outside-ops"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops: not run on a summary-only trace
#: host memory freed outside every op a step from which the untraced block is called the frees' (MB)
FREED_MIN_MB = 64.0


def detect(ctx: RuleContext) -> list[Finding]:
    cp = ctx.optional(CRITICAL_PATH)
    if cp is None or cp.has_device or not len(cp.step):  # with a device: launch-bound's
        return []
    per_step = cp.host_parts_ns[:, HOST_PARTS.index("untraced")].astype(np.float64)
    if ctx.pct_of_step(_typical(per_step)) < ctx.cfg.loop_code_min_pct:
        return []
    untraced_ns = float(per_step.mean())  # what is shown, and what the replay takes off: every step's
    longest_ns = _typical(cp.untraced_longest_ns.astype(np.float64))
    short_ns = _typical(cp.untraced_short_ns.astype(np.float64))
    freed_mb = _typical(cp.untraced_freed_bytes.astype(np.float64)) / 1e6
    untraced_pct = round(ctx.pct_of_step(untraced_ns), 1)
    evidence: dict[str, object] = {
        "untraced_ms": ms(untraced_ns), "untraced_pct": round(ctx.pct_of_step(untraced_ns), 2),
        "per_step_untraced_ms": [ms(v) for v in per_step.tolist()], "longest_stretch_ms": ms(longest_ns),
        "freed_outside_ops_mb": round(freed_mb, 1),
        "host_path_pct": {k: round(v, 1) for k, v in cp.host_share_pct().items()}}
    change = _change(_typical(per_step), short_ns, longest_ns, freed_mb, untraced_pct)
    replayed = replayed_saving(ctx, "move-loop-code", evidence)
    if replayed is None:
        return [ctx.finding(RULE_ID, untraced_ns, "untraced-host-time", evidence, change)]
    return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]


def _typical(per_step: npt.NDArray[np.float64]) -> float:
    """The mean over steps, the largest value aside from 4 steps on: one disturbed step does not drive it,
    and code that runs every few steps (an epoch's start, a checkpoint every N steps) still counts."""
    if len(per_step) >= 4:
        per_step = np.sort(per_step)[:-1]
    return float(per_step.mean())


def _change(untraced_ns: float, short_ns: float, longest_ns: float, freed_mb: float, untraced_pct: float) -> Change:
    """Many short gaps between ops are the model's own Python per op (vectorise, compile); one block a
    step is loop code — freeing big tensors where the profile recorded the frees, else code to move."""
    if in_short_gaps(untraced_ns, short_ns):
        return Change("fewer-ops", {"untraced_pct": untraced_pct})
    if freed_mb >= FREED_MIN_MB:
        return Change("reuse-buffers", {"untraced_pct": untraced_pct, "freed_mb": round(freed_mb)})
    return Change("move-loop-code", {"untraced_pct": untraced_pct, "longest_ms": round(longest_ns / 1e6, 1)})
