"""THE one place for advice wording and documentation links (STYLE §5: findings are data).

Keyed by rule id (``RULES``: title and what was found), by remedy key (``CHANGES``: what to change,
code-level where possible) and by gain-basis key (``BASIS``, kept in basis_texts.py: how the saving
was estimated). Templates are ``str.format`` strings over the finding's evidence, its change
parameters and ``gain_ms``, ``gain_pct``, ``step_ms``, ``rank`` (the evidence's own keys win);
:func:`fill` renders them so that a person never reads a Python value (:mod:`stepscope.report._prose`):
lists read as prose, shapes as ``1×141×512``, and a part written ``⟨…⟩`` is left out when one of its
fields has no value (None, empty), so there is no empty placeholder like "(here  )". A missing field
outside such a part renders as ``?`` instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stepscope.analysis.platform import NO_DEVICE
from stepscope.report._prose import fill

if TYPE_CHECKING:
    from stepscope.advisor.finding import Finding

from stepscope.report.basis_texts import BASIS, FOUND_BY_BASIS, TITLE_BY_BASIS
from stepscope.report.change_texts import CHANGES, TF32_WHERE
from stepscope.report.platform_texts import CHANGES_BY_PLATFORM, dialect, platform_key, platform_links
from stepscope.report.verdict_texts import (
    CAUSE_WORDS,
    CPU_CAUSE_WORDS,
    CPU_UNADDRESSED_HINT,
    NO_HOST_STAGE,
    UNADDRESSED_HINT,
    VERDICT_STAGES,
    cause_words,
    unaddressed_text,
    unprofiled_text,
    verdict_text,
)

DOCS = "docs/rules/{rule}.md"
#: rules whose gain is already the job's (SCOPE "cluster"; tests/unit/report checks the list)
CLUSTER_RULES = frozenset({"straggler-rank", "load-imbalance", "pipeline-bubble"})


def gain_share(findings: Iterable[tuple[str, Sequence[int], bool]]) -> str:
    """What the findings' gain percentages are shares of, from each one's (rule, ranks, whole_trace):
    the one window of a trace without step markers; the job's step in a multi-rank run, where every
    finding is grouped across the ranks or is a cluster rule's (advisor.ranking); else the step."""
    items = list(findings)
    if items and all(whole for _, _, whole in items):
        return "window"
    return "job step" if any(ranks or rule in CLUSTER_RULES for rule, ranks, _ in items) else "step"


@dataclass(frozen=True)
class RuleText:
    """Title and finding sentence of one rule, and its external references."""

    title: str
    found: str
    links: tuple[str, ...] = ()


RULES: dict[str, RuleText] = {
    "dataloader-bound": RuleText(
        "Input pipeline stalls the step",
        "{dataloader_pct:.1f}% of the step ({dataloader_ms:.1f} ms) is spent in the DataLoader "
        "({loading} loading): the step waits for its data.",
        ("https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading",
         "https://docs.nvidia.com/deeplearning/dali/user-guide/docs/")),
    "pageable-memcpy": RuleText(
        "Copies from pageable host memory",
        "{pageable_copies_per_step} host<->device copies per step use pageable memory "
        "({pageable_ms:.2f} ms, {pageable_pct:.1f}% of the step⟨, {bandwidth_gbps:.2f} GB/s: their bytes over their "
        "time⟩): staged, slower and never overlapped.",
        ("https://pytorch.org/docs/stable/data.html#memory-pinning",
         "https://developer.nvidia.com/blog/how-optimize-data-transfers-cuda-cc/")),
    "sync-in-step": RuleText(
        "The host waits for the GPU inside the step",
        "Blocking syncs take {sync_ms:.2f} ms per step ({sync_pct:.1f}%): {sync_calls_per_step} sync calls and "
        "{d2h_copies_per_step} device-to-host copies per step.",
        ("https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
         "#avoid-unnecessary-cpu-gpu-synchronization",)),
    "launch-bound": RuleText(
        "The GPU waits for the host to launch work",
        "The GPU sits idle waiting for the host {host_wait_ms:.1f} ms per step ({host_wait_pct:.1f}%, median "
        "over steps, DataLoader time excluded⟨; as recorded: without the profiler's own cost the host holds "
        "{unprofiled_host_path_ms:.1f} ms of the step's critical path⟩)⟨; {short_kernel_pct}% of kernels run shorter "
        "than their launch⟩.",
        ("https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs",
         "https://pytorch.org/docs/stable/torch.compiler.html")),
    "small-kernel-optimizer": RuleText(
        "The optimizer step is many small kernels",
        "Each optimizer step launches {kernels_per_optimizer_step} kernels ({elementwise_pct:.0f}% single-tensor "
        "elementwise), {optimizer_kernel_ms:.2f} ms of GPU time.",
        ("https://pytorch.org/docs/stable/optim.html#algorithms",)),
    "no-tensor-cores": RuleText(
        "GEMM/convolution kernels do not use Tensor Cores",
        "{eligible_kernel_pct:.0f}% of kernel time is launched by Tensor-Core-eligible operators, "
        "but only {tensor_core_pct_of_eligible:.0f}% of it runs on Tensor Cores.",
        ("https://pytorch.org/docs/stable/amp.html",
         "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices")),
    "gemm-dims-not-multiple-of-8": RuleText(
        "Half-precision GEMMs with unaligned dimensions",
        "fp16/bf16 GEMM calls with N or K not a multiple of {align}: {misaligned_calls} "
        "({misaligned_kernel_pct:.1f}% of kernel time), e.g. {example_shapes}.",
        ("https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/",)),
    "channels-last": RuleText(
        "Convolutions run in NCHW on Tensor Cores",
        "Convolutions take {conv_kernel_pct:.0f}% of kernel time and cuDNN transposes NCHW tensors around "
        "them ({layout_transform_ms:.2f} ms of layout kernels per step)⟨; the batch norm and pooling between "
        "them run NCHW kernels that have channels-last variants ({nchw_variant_ms:.2f} ms per step)⟩.",
        ("https://pytorch.org/tutorials/intermediate/memory_format_tutorial.html",)),
    "under-filled-grid": RuleText(
        "Kernels launch fewer blocks than the GPU has SMs",
        "{underfilled_kernel_pct:.1f}% of kernel time runs in kernels⟨ of at least {min_kernel_us} µs⟩ with fewer "
        "blocks than the⟨ {sm_count}⟩ SMs"
        "⟨ (mean {mean_blocks} blocks)⟩: {idle_sm_ms:.2f} ms of SM time idle per step.",
        ("https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/#occupancy",)),
    "tf32-not-bf16": RuleText(
        "GEMMs and convolutions run in TF32 on FP32 tensors",
        "Tensor-Core GEMMs / convolutions on FP32 tensors (TF32) take {tf32_ms:.2f} ms a step; bf16 Tensor "
        "Cores have {bf16_over_tf32}x TF32's peak here.",
        ("https://pytorch.org/docs/stable/amp.html",)),
    "unfused-elementwise": RuleText(
        "Chains of elementwise kernels run unfused",
        "{runs_per_step} run(s) a step of {kernels_per_run} elementwise kernels each, queued back to back on "
        "tensors of one size, take {run_ms:.2f} ms a step; fused, each would make one pass ({saved_ms:.2f} ms "
        "less kernel time), e.g. {example_ops}.",
        ("https://pytorch.org/docs/stable/generated/torch.compile.html",)),
    "comm-not-overlapped": RuleText(
        "Communication is not hidden behind computation",
        "{exposed_comm_ms:.1f} ms per step ({exposed_comm_pct:.1f}%) of communication runs with no computation "
        "beside it⟨ (overlap ratio {overlap_ratio_pct:.0f}%)⟩⟨, on the host in {backend} collectives⟩.",
        ("https://pytorch.org/docs/stable/notes/ddp.html",
         "https://pytorch.org/docs/stable/fsdp.html")),
    "straggler-rank": RuleText(
        "One rank arrives late at the collectives and the others wait for it",
        "Rank {slow_rank} arrives last at {times_last} of {collectives} collectives, {late_ms:.2f} ms per step after "
        "the next rank ({in_trace_late_ms:.2f} ms of it explained in the trace); what delays it: {cause_text}. "
        "⟨{victims_text} for it.⟩",
        ("https://hta.readthedocs.io/en/latest/source/features/temporal_breakdown.html",)),
    "load-imbalance": RuleText(
        "Ranks do unequal work",
        "The busiest rank ({busiest_rank}) computes {imbalance_pct:.0f}% longer than the average rank "
        "({max_compute_ms:.2f} vs {mean_compute_ms:.2f} ms per step).",
        ("https://hta.readthedocs.io/en/latest/source/features/temporal_breakdown.html",)),
    "pipeline-bubble": RuleText(
        "Pipeline stages sit idle waiting for each other",
        "Stage {slowest_stage} (rank {slowest_rank}), the busiest of {stage_count} pipeline stages, is idle "
        "{critical_bubble_ms:.2f} ms per step ({critical_bubble_pct:.0f}% of the step): {warmup_ms:.2f} ms filling "
        "the pipeline, {cooldown_ms:.2f} ms draining it, {p2p_wait_ms:.2f} ms inside recv / send kernels.",
        ("https://pytorch.org/docs/stable/distributed.pipelining.html", "https://arxiv.org/abs/2104.04473")),
    "allocator-fragmentation": RuleText(
        "The caching allocator wastes memory or churns",
        "Signals: {signals}.⟨ At peak, {unused_reserved_gib} GiB of {peak_reserved_gib} GiB reserved is unused "
        "({unused_reserved_pct}%).⟩ Allocator calls take {alloc_calls_ms:.2f} ms per step.",
        ("https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf",)),
    "memory-near-capacity": RuleText(
        "GPU memory is nearly full",
        "Peak reserved memory is {peak_reserved_gib} GiB, {peak_pct_of_device:.0f}% of the "
        "{device_memory_gib} GiB {device}.",
        ("https://pytorch.org/docs/stable/checkpoint.html", "https://pytorch.org/docs/stable/fsdp.html")),
    "heavy-host-op-no-gpu": RuleText(
        "Host work without GPU work inside the step",
        "Ops that launch no GPU work keep the GPU idle {gpu_idle_in_ops_ms:.2f} ms per step "
        "({gpu_idle_in_ops_pct:.1f}%); the largest: {op}.", ()),
    "host-outside-ops": RuleText(
        "The step's time is outside every recorded op",
        "{untraced_ms:.1f} ms per step ({untraced_pct:.1f}%) pass on the host outside every op "
        "the profiler recorded (the longest stretch {longest_stretch_ms:.1f} ms a step): the loop's Python, I/O, "
        "garbage collection — no operators view shows it.",
        ("https://docs.python.org/3/library/gc.html#gc.freeze",
         "https://pytorch.org/docs/stable/profiler.html#torch.profiler.profile")),
    "host-stalled": RuleText(
        "The host thread is stalled inside its ops",
        "{stalled_calls_per_step} op calls a step take at least 10x as long as the same op on the same shapes: "
        "{lost_ms:.1f} ms per step ({lost_pct:.1f}%, the median step's) lost inside them, not work — the "
        "most in {op}⟨ on {op_shapes}⟩, typically {op_typical_us} µs, up to {op_max_ms:.1f} ms⟨; {metadata_ms:.1f} ms "
        "a step in ops that only make a view⟩. The thread was waiting for the GIL or a core.",
        ("https://docs.python.org/3/library/sys.html#sys.setswitchinterval",
         "https://pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html")),
    "float64-ops": RuleText(
        "Ops run on float64 tensors",
        "{calls_per_step:g} op calls a step take float64 tensors: {float64_ms:.1f} ms per step ({float64_pct:.1f}%) on "
        "the step's path, the most in {op} — double precision where the model computes in float32.",
        ("https://pytorch.org/docs/stable/tensor_attributes.html#torch.dtype",
         "https://pytorch.org/docs/stable/generated/torch.from_numpy.html")),
    "cudnn-benchmark-off": RuleText(
        "Convolutions use cuDNN's fallback algorithms",
        "{fallback_conv_kernel_pct:.0f}% of kernel time is in cuDNN's generic algorithm-0 kernels "
        "({fallback_conv_ms:.1f} ms per step): cuDNN benchmarking is likely off.",
        ("https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-cudnn-auto-tuner",)),
    "conv-algo-search": RuleText(
        "cuDNN searches convolution algorithms every step",
        "{searching_calls} convolution calls launch up to {max_kernels_per_call} kernels each (an algorithm "
        "search) in steps {steps_with_search}: {search_ms:.2f} ms per step of trial kernels; the calls hold the "
        "host {search_host_ms:.2f} ms beyond a call that does not search (their waits for the trials included).",
        ("https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-cudnn-auto-tuner",)),
    "copy-bound": RuleText(
        "Host-device copies hold the step",
        "Copies are on the step's critical path {copy_on_path_ms:.2f} ms a step ({copy_on_path_pct:.0f}%), moving "
        "{gb_per_step:g} GB⟨ at {gb_per_s:g} GB/s⟩⟨ ({pinned_pct:g}% from pinned memory)⟩; the compute they could run "
        "under takes {compute_on_path_ms:.2f} ms.",
        ("https://developer.nvidia.com/blog/how-overlap-data-transfers-cuda-cc/",
         "https://pytorch.org/docs/stable/notes/cuda.html#cuda-streams")),
    "attention-math-fallback": RuleText(
        "Attention runs on SDPA's unfused math backend",
        "{math_ms:.1f} ms a step of attention runs on scaled_dot_product_attention's math backend "
        "({kernels_per_step:g} kernels a step): the score matrix goes through memory, softmax and masking "
        "run as separate kernels⟨ and its {dtype} inputs are computed in FP32⟩⟨; a fused kernel needs at least "
        "{fused_min_ms:.2f} ms for its {tflop_per_step:g} TFLOP at the device's peak⟩.",
        ("https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html",
         "https://pytorch.org/docs/stable/backends.html#torch.backends.cuda.can_use_flash_attention")),
    "compile-in-step": RuleText(
        "torch.compile compiles inside the steps",
        "{compile_pct:.0f}% of the step ({compile_ms:.1f} ms) is compiling⟨, in {steps_compiling} of the {steps} "
        "profiled steps⟩⟨; a graph recompiled {recompile} times⟩.",
        ("https://pytorch.org/docs/stable/torch.compiler_troubleshooting.html",
         "https://pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html")),
    "compile-fell-back": RuleText(
        "torch.compile gave up: the compiled function runs eager",
        "Dynamo's cache lookups a step: {cache_lookups_per_step:g}; compiled regions run after them: "
        "{compiled_regions_per_step:g} (in {steps_falling_back} of the {steady_steps} steps that do not compile): "
        "{eager_frames_per_step:g} frame(s) a step run eager under the torch.compile wrapper — Dynamo skips them "
        "(its recompile limit reached, or an error or construct it gave up on). The step's ops outside compiled "
        "regions take {eager_ops_ms:.2f} ms ({eager_ops_pct:.0f}% of the step)⟨: {top_eager_ops_text}⟩.",
        ("https://pytorch.org/docs/stable/torch.compiler_troubleshooting.html",
         "https://pytorch.org/docs/stable/torch.compiler_faq.html")),
    "variable-input-shapes": RuleText(
        "Input shapes change from step to step",
        "{varying_calls_pct:.0f}% of the ops that run every step see shapes that differ between steps, "
        "e.g. {example_op} with {example_shapes}.", ()),
    "outdated-software": RuleText(
        "Old software stack",
        "The trace shows {issues_text}⟨{versions_text}⟩.",
        ("https://pytorch.org/get-started/locally/",)),
    "zero-grad-not-none": RuleText(
        "Gradients are zeroed with kernels every step",
        "optimizer.zero_grad() launches {zero_grad_kernels_per_step} kernels per step ({zero_grad_ms:.2f} ms), and "
        "the next backward adds to the zeros ({first_accumulation_ms:.2f} ms).",
        ("https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html",)),
    "small-memcpy": RuleText(
        "Many tiny host<->device copies",
        "{small_copies_per_step} copies under {small_bytes_limit} bytes per step ({small_copies_ms:.2f} ms): "
        "each pays a fixed latency.",
        ()),
    "cuda-launch-blocking": RuleText(
        "Kernel launches are synchronous",
        "{blocking_launch_pct:.0f}% of {launches} kernels finish before their launch call returns "
        "(median launch {median_launch_us} µs): CUDA_LAUNCH_BLOCKING=1 is probably set.",
        ("https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",)),
}



ISSUE_WORDS = {"cuda-runtime-old": "an old CUDA runtime", "driver-older-than-runtime": "a driver older than "
               "the CUDA runtime", "legacy-profiler-schema": "the 2021 profiler schema (PyTorch 1.9 or older)"}


#: the cluster analysis' work metrics, as a reason a rank is slow
REASON_WORDS = {"kernel_count": "more kernels", "compute_ns": "more GPU compute", "step_ns": "longer steps"}


def _values(f: Finding) -> dict[str, Any]:
    ev = dict(f.evidence)
    issues = [ISSUE_WORDS.get(str(i), str(i)) for i in ev.get("issues", [])]
    versions = [f"{label} {ev[k]}" for k, label in (("cuda_runtime", "CUDA runtime"), ("cuda_driver", "driver"))
                if ev.get(k) not in (None, "None", "")]
    reasons = [REASON_WORDS.get(str(r), str(r)) for r in ev.get("reasons", [])]
    causes = ev.get("cause_ms", {})
    words = cause_words(f.platform)
    cause_text = ", ".join(f"{words.get(str(c), str(c))} {float(v):.2f} ms"
                           for c, v in sorted(causes.items(), key=lambda cv: -float(cv[1]))
                           if float(v) >= 0.005) if isinstance(
        causes, dict) else ""
    derived = {"issues_text": " and ".join(issues) or "an old stack", "reasons_text": reasons,
               "cause_text": cause_text or "nothing in the trace",
               "victims_text": _victims([int(v) for v in ev.get("victims", [])]),
               "cause_word": words.get(str(f.change.params.get("cause", "")), "its own work"),
               "versions_text": f" ({', '.join(versions)})" if versions else "",
               "tf32_where": TF32_WHERE.get(f.change.params.get("tf32", False)),
               "busiest_steps_text": ", ".join(str(r) for r in ev.get("busiest_per_step", [])),
               "rank_compute_text": ", ".join(f"rank {r} {float(v):.1f}" for r, v in
                                              dict(ev.get("per_rank_compute_ms", {})).items())}
    general = {"gain_ms": f.est_gain_ms, "gain_pct": f.est_gain_pct, "step_ms": f.step_ns / 1e6, "rank": f.rank}
    return {**general, **ev, **dict(f.change.params), **derived}


#: a rule's title and finding as said for a platform (``cpu``: no device, the optimizer's ops, not kernels)
RULES_BY_PLATFORM: dict[str, dict[str, RuleText]] = {
    "cpu": {"small-kernel-optimizer": RuleText(
        "The optimizer steps tensor by tensor",
        "Each optimizer step runs {ops_per_optimizer_step:g} ops on the CPU ({multi_tensor_pct:.0f}% of their time "
        "multi-tensor or fused), {optimizer_host_ms:.2f} ms a step in {optimizer}.step: one pass over each "
        "parameter's memory per op.",
        ("https://pytorch.org/docs/stable/optim.html#algorithms",))},
}


def _rule_text(f: Finding) -> RuleText | None:
    return RULES_BY_PLATFORM.get(platform_key(f.platform), {}).get(f.rule) or RULES.get(f.rule)


def title_text(f: Finding) -> str:
    rt = _rule_text(f)
    title = TITLE_BY_BASIS.get((f.rule, f.basis), rt.title if rt is not None else f.rule)
    return dialect(title, f.platform, f.whole_trace)


def found_text(f: Finding) -> str:
    rt = _rule_text(f)
    tpl = FOUND_BY_BASIS.get((f.rule, f.basis), rt.found if rt is not None else None)
    text = fill(tpl, _values(f)) if tpl is not None else ""
    if f.ranks:
        text = f"{text} (on ranks {_rank_list(f.ranks)}; the figures are rank {f.rank}'s)"
    return dialect(text, f.platform, f.whole_trace)


def change_text(f: Finding) -> str:
    tpl = CHANGES_BY_PLATFORM.get(platform_key(f.platform), {}).get(f.change.key) or CHANGES.get(f.change.key)
    return dialect(fill(tpl, _values(f)) if tpl is not None else f.change.key, f.platform, f.whole_trace)


def basis_text(f: Finding) -> str:
    tpl = BASIS.get(f.basis)
    text = fill(tpl, _values(f)) if tpl is not None else f.basis
    ev = f.evidence
    if f.ranks and f.rule not in CLUSTER_RULES and "whatif_job_predicted_ms" in ev:
        before, after = float(ev["whatif_job_measured_ms"]), float(ev["whatif_job_predicted_ms"])
        text += (f"; for the job: every rank replayed with the change, tied at their collectives, the job's mean "
                 f"step goes from {before:.2f} to {after:.2f} ms")
        if after >= before:  # the slow ranks' path does not go through the change: the gain is 0, said so
            text += " — no saving for the job"
    elif f.ranks and f.rule not in CLUSTER_RULES:
        text += "; for the job: how much the slowest rank's step shrinks when every rank saves its own gain"
    return dialect(text, f.platform, f.whole_trace)


def _victims(ranks: Sequence[int]) -> str | None:
    """"Rank 0 waits" / "Ranks 0, 2 wait"; None without victims."""
    if not ranks:
        return None
    return f"Rank {ranks[0]} waits" if len(ranks) == 1 else f"Ranks {_rank_list(ranks)} wait"


def _rank_list(ranks: Sequence[int]) -> str:
    rs = sorted(ranks)
    if len(rs) > 2 and rs == list(range(rs[0], rs[-1] + 1)):
        return f"{rs[0]}-{rs[-1]}"
    return ", ".join(str(r) for r in rs)


def advice_text(f: Finding) -> str:
    """The whole advice: what was found, then what to change."""
    return f"{found_text(f)} {change_text(f)}".strip()


def links(rule: str, platform: str = "") -> tuple[str, ...]:
    """The rule's page and its references, as fit the platform (:func:`platform_links`)."""
    rt = RULES.get(rule)
    return platform_links((DOCS.format(rule=rule), *rt.links) if rt is not None else (DOCS.format(rule=rule),),
                          platform)


def not_run_text(rule: str, reason: str, platform: str = "") -> str:
    """Why a rule did not run, in the platform's words (an NPU's on Ascend, as its findings)."""
    return dialect(f"{rule}: not run: {reason}", platform)


def deviceless_rules_text(count: int) -> str:
    """The rules of a device's work that did not run on a trace without a device, said once (not named: their
    names speak of hardware the program never ran on)."""
    return f"{count} rules on a device's work not run: {NO_DEVICE}"


__all__ = ["CAUSE_WORDS", "CLUSTER_RULES", "CPU_CAUSE_WORDS", "CPU_UNADDRESSED_HINT", "NO_HOST_STAGE", "RULES",
           "UNADDRESSED_HINT", "VERDICT_STAGES", "advice_text", "basis_text", "cause_words", "change_text",
           "found_text", "gain_share", "links", "not_run_text", "title_text", "unaddressed_text", "unprofiled_text",
           "verdict_text"]
