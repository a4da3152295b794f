"""``no-tensor-cores``: GEMM / convolution time runs in FP32 without Tensor Cores (SPEC §6; TB plugin).

Detects: kernels launched by Tensor-Core-eligible operators (convolutions, matrix products,
attention: :data:`stepscope.analysis.tensor_cores.TC_ELIGIBLE_OPS`, the launching op or any op above
it) take at least ``tc_eligible_min_pct`` of kernel time, and at most ``tc_max_used_pct`` of that
eligible time runs in Tensor-Core kernels (kernel-name table of the same module). This is the TB
plugin's "Kernels with N% time are launched by Tensor Cores eligible operators" recommendation.
Or: the eligible kernels that do FP32 math on CUDA cores (launched by an op taking FP32 tensors only,
or named ``ffma`` / ``sgemm`` where no types were recorded) take at least
``tc_fp32_cuda_core_min_pct`` of kernel time, however much else runs on Tensor Cores — an FP32
transformer whose attention kernels use them while every GEMM runs FFMA (Hugging Face GPT-2 on an
H200: 10.1 % of its eligible time on Tensor Cores, 61 % of all kernel time in FP32 GEMMs on CUDA cores).

The numbers are the tensor_cores analysis' (each kernel's nearest eligible ancestor op, the
Tensor-Core kernel names, the ops' input types).

Gain: the ``amp`` remedy replayed (:mod:`stepscope.analysis.whatif.precision`: the eligible non-TC
kernels at 1 / speed-up of their time, the speed-up being the device's dense half-precision Tensor-Core
peak over its FP32 peak, :func:`stepscope.analysis.peaks.amp_speedup`: 8 on V100, 16 on A100, 14.8 on
H100 / H200, 2 where the device is unknown) — what reaches the step once the kernels shrink (nw0's
DataLoader, nw4's host then hold it). Where ``amp_speedup`` is set, or the replay did not run: eligible
non-TC kernel time per step × (1 − 1 / speed-up) × the share of those kernels' time on the step's
critical path (``remedies``' ``tensor-cores`` kernel set). On an H200 (``tests/data/h200_bounds/fp32``
→ ``r10/bf16_8k``, the same MLP step under bf16 autocast) the step went from 60.0 to 5.15 ms; the flat
2 predicted 30.6 ms, the peak ratio 6.4 ms.

Change: ``torch.autocast`` with bf16 on compute capability ≥ 8.0 (and TF32 as the one-line
alternative), fp16 + GradScaler before that, without TF32, which a pre-Ampere GPU (a V100) does not
have; where the compute capability is unknown, fp16 and TF32 "on Ampere or newer". When the eligible
ops already take half inputs, the missing Tensor Cores point to shapes instead (see
``gemm-dims-not-multiple-of-8``).
"""

from __future__ import annotations

from stepscope.advisor.context import RuleContext
from stepscope.advisor.finding import Change, Finding
from stepscope.advisor.rules._util import amp_speedup_for, ms, on_path_share, per_step, replayed_saving, top_names
from stepscope.analysis.registry import TENSOR_CORES

RULE_ID = "no-tensor-cores"
SCOPE = "rank"
ADDRESSES: tuple[str, ...] = ("compute",)  # the bounds its change shortens
NEEDS_HOST_TIMELINE = True  # reads host ops, launches or annotations: not run on a summary-only trace
HALF_TYPES = ("Half", "BFloat16", "c10::Half", "c10::BFloat16", "float16", "bfloat16")


def detect(ctx: RuleContext) -> list[Finding]:
    tc = ctx.result(TENSOR_CORES)
    elig_pct, tc_pct = tc.eligible_pct, tc.tc_pct_of_eligible
    little_tc = elig_pct >= ctx.cfg.tc_eligible_min_pct and tc_pct <= ctx.cfg.tc_max_used_pct
    if not little_tc and tc.fp32_cuda_core_pct < ctx.cfg.tc_fp32_cuda_core_min_pct:
        return []
    n = max(len(ctx.steps), 1)
    non_tc_ns = float(tc.non_tc_kernels.total_ns)
    evidence = {
        "eligible_kernel_pct": round(elig_pct, 2), "tensor_core_pct_of_eligible": round(tc_pct, 2),
        "fp32_cuda_core_pct": round(tc.fp32_cuda_core_pct, 2),
        "eligible_non_tc_ms": ms(per_step(ctx, non_tc_ns)),
        "kernel_ms": ms(per_step(ctx, tc.kernel_ns)),
        # their eligible ops by the time of those kernels (the operator view adds copies and memsets)
        "top_ops": [{"name": name, "non_tc_kernel_ms": ms(t / n)} for name, _, t in tc.non_tc_ops.top(5)],
        "top_kernels": top_names(tc.non_tc_kernels, per=n),
        "input_types": list(tc.input_types),
        "device": tc.device,
    }
    speedup = amp_speedup_for(ctx, tc.peak, "fp32")
    evidence["amp_speedup"] = round(speedup, 2)
    change = _change(ctx, tc.input_types, tc.compute_major)
    # replayed (the amp remedy, at the device's peak ratio): what reaches the step once the kernels
    # shrink; a speed-up of the user's own (``amp_speedup`` set) is the first-order estimate below
    replayed = replayed_saving(ctx, "amp", evidence) if ctx.cfg.amp_speedup <= 0 else None
    if replayed is not None:
        return [ctx.finding(RULE_ID, replayed, "replayed", evidence, change)]
    gain = per_step(ctx, non_tc_ns) * (1.0 - 1.0 / max(speedup, 1.0))
    gain *= on_path_share(ctx, "tensor-cores", evidence)  # only what reaches the step counts
    return [ctx.finding(RULE_ID, gain, "amp-speedup", evidence, change)]


def _change(ctx: RuleContext, input_types: tuple[str, ...], compute_major: int | None) -> Change:
    ampere = compute_major is not None and compute_major >= 8
    if input_types and all(any(h in t for h in HALF_TYPES) for t in input_types):
        return Change("pad-shapes-for-tensor-cores", {"multiple": ctx.cfg.gemm_align_ampere if ampere
                                                      else ctx.cfg.gemm_align})
    if ampere:
        return Change("enable-amp", {"dtype": "bfloat16", "grad_scaler": False, "tf32": True})
    # TF32 came with Ampere (compute capability 8.0): a V100 or a T4 has none; an NVIDIA GPU of unknown
    # compute capability may have it (None: the advice says "on Ampere or newer")
    unknown = compute_major is None and ctx.platform.split("+")[0] == "cuda"
    return Change("enable-amp", {"dtype": "float16", "grad_scaler": True, "tf32": None if unknown else False})
