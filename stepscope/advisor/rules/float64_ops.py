"""``float64-ops``: ops on float64 tensors in a step that otherwise computes in float32.

Detects: the fp64 analysis' ops (:mod:`stepscope.analysis.fp64`: an input typed ``double`` with at least
1,024 elements; a Python float argument is not one) whose time on the step's path is at least
``float64_min_pct`` of the step: on a CPU-only rank their own host time (the host is the path), on a
device rank the device time of the work they launched, on the path.

Gain: half of that time, a lower bound — float32 halves the bytes moved and doubles the elements per
vector register, and a GPU runs FP64 at half its FP32 rate at best (1/32-1/64 outside the data centre);
transcendental math (exp, log) gains more. An outside capture (``tests/data/cpu_cases/fp64_loss``): the
cross-entropy on logits cast to float64, 153.0 ms of the 231.7 ms recorded step in float64 ops; gain
76.5 ms; the float32 program measured 91.4 ms (140.3 ms saved: the bound is loose, not wrong).

The change: keep the tensors float32 — ``torch.from_numpy`` keeps numpy's float64 default (``.float()`` or
``np.float32`` data), ``torch.tensor(..., dtype=torch.float64)``, a ``.double()`` / ``.to(torch.float64)``
(a "numerically safe" loss: ``cross_entropy`` is stable in float32 — it works in log space).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import ms, top_names
from stepscope.analysis.registry import CRITICAL_PATH, FP64

RULE_ID = "float64-ops"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("host", "compute")  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops' input types
#: the share of the float64 ops' time a float32 program saves at least
FLOAT32_SAVES = 0.5
DEVICE_RATE = "a GPU runs float64 at half its float32 rate at best (1/32-1/64 outside the data centre)"


def detect(ctx: RuleContext) -> list[Finding]:
    f = ctx.optional(FP64)
    if f is None:
        return []
    n = max(f.step_count, 1)
    cp = ctx.optional(CRITICAL_PATH)
    on_path_ns = f.on_path_ns
    pct = ctx.pct_of_step(on_path_ns)
    if pct < ctx.cfg.float64_min_pct:
        return []
    evidence: dict[str, object] = {
        "float64_ms": ms(on_path_ns), "float64_pct": round(pct, 1), "calls_per_step": round(f.calls_per_step, 1),
        "op": f.ops.top(1)[0][0], "ops": top_names(f.ops, per=n)}
    on_device = cp is not None and cp.has_device
    if on_device:  # said only where a device runs the work (a CPU-only rank's words name no GPU)
        evidence["device_rate"] = DEVICE_RATE
    return [ctx.finding(RULE_ID, on_path_ns * FLOAT32_SAVES, "float32-half", evidence,
                        Change("keep-float32", {"float64_pct": round(pct, 1),
                                                **({"device_rate": DEVICE_RATE} if on_device else {})}))]
