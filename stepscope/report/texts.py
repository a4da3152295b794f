"""THE one place for advice wording and documentation links (STYLE §5: findings are data).

Keyed by rule id (``RULES``: title and what was found), by remedy key (``CHANGES``: what to change,
code-level where possible) and by gain-basis key (``BASIS``: how the saving was estimated). Templates
are ``str.format`` strings over the finding's evidence, its change parameters and ``gain_ms``,
``gain_pct``, ``step_ms``, ``rank``; a missing field renders as ``?`` instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepscope.advisor.finding import Finding
    from stepscope.advisor.verdict import Verdict

DOCS = "docs/rules/{rule}.md"


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
        "({loading} loading) while the GPU has nothing to do.",
        ("https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading",
         "https://docs.nvidia.com/deeplearning/dali/user-guide/docs/")),
    "no-tensor-cores": RuleText(
        "GEMM/convolution kernels do not use Tensor Cores",
        "{eligible_kernel_pct:.0f}% of kernel time is launched by Tensor-Core-eligible operators, "
        "but only {tensor_core_pct_of_eligible:.0f}% of it runs on Tensor Cores.",
        ("https://pytorch.org/docs/stable/amp.html",
         "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices")),
}

CHANGES: dict[str, str] = {
    "set-num-workers": "Load batches in background workers: DataLoader(..., num_workers={num_workers}, "
                       "pin_memory=True, persistent_workers=True) — size num_workers to the free CPU cores; "
                       "move heavy preprocessing to the GPU (e.g. DALI) or pre-decode the data set.",
    "speed-up-input-pipeline": "Workers do not keep up: raise num_workers (up to the free cores), "
                               "prefetch_factor={prefetch_factor}, persistent_workers=True; make each sample "
                               "cheaper (pre-decoded binary shards, fewer small files, GPU-side augmentation).",
    "enable-amp": "Run the model under mixed precision: with torch.autocast('cuda', dtype=torch.{dtype}): ... "
                  "(fp16 needs torch.cuda.amp.GradScaler; on Ampere+ bf16 does not). "
                  "One-line alternative on Ampere+: torch.backends.cuda.matmul.allow_tf32 = True; "
                  "torch.backends.cudnn.allow_tf32 = True.",
    "pad-shapes-for-tensor-cores": "The ops already take half inputs, yet no Tensor-Core kernel runs: pad "
                                   "the GEMM/conv dimensions (hidden size, vocabulary, channels, batch) to "
                                   "multiples of {multiple}.",
}

BASIS: dict[str, str] = {
    "exposed-input-time": "time per step spent only in the DataLoader (GPU idle, no other work) — what "
                          "background workers can hide; an upper bound, since workers share the host CPU",
    "amp-speedup": "eligible non-Tensor-Core kernel time per step ({eligible_non_tc_ms:.1f} ms) × (1 − 1/2): a "
                   "conservative 2× on those kernels with mixed precision",
}

VERDICT_STAGES: dict[str, str] = {
    "input": "input pipeline",
    "host": "host (CPU work, launches)",
    "gpu_compute": "GPU compute",
    "communication": "communication",
    "memory_copies": "memory copies",
}


class _Lenient(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Format a template; unknown fields render as ``?``, bad format specs fall back to str()."""
    safe = _Lenient(values)
    try:
        return template.format_map(safe)
    except (ValueError, TypeError):
        return template.format_map(_Lenient({k: str(v) for k, v in values.items()}))


def _values(f: Finding) -> dict[str, Any]:
    return {**dict(f.evidence), **dict(f.change.params), "gain_ms": f.est_gain_ms, "gain_pct": f.est_gain_pct,
            "step_ms": f.step_ns / 1e6, "rank": f.rank}


def title_text(f: Finding) -> str:
    rt = RULES.get(f.rule)
    return rt.title if rt is not None else f.rule


def found_text(f: Finding) -> str:
    rt = RULES.get(f.rule)
    return fill(rt.found, _values(f)) if rt is not None else ""


def change_text(f: Finding) -> str:
    tpl = CHANGES.get(f.change.key)
    return fill(tpl, _values(f)) if tpl is not None else f.change.key


def basis_text(f: Finding) -> str:
    tpl = BASIS.get(f.basis)
    return fill(tpl, _values(f)) if tpl is not None else f.basis


def advice_text(f: Finding) -> str:
    """The whole advice: what was found, then what to change."""
    return f"{found_text(f)} {change_text(f)}".strip()


def links(rule: str) -> tuple[str, ...]:
    rt = RULES.get(rule)
    return ((DOCS.format(rule=rule),) + rt.links) if rt is not None else (DOCS.format(rule=rule),)


def not_run_text(rule: str, reason: str) -> str:
    return f"{rule}: not run: {reason}"


def verdict_text(v: Verdict) -> str:
    """``rank 0: bound by GPU compute (56%) — input pipeline 33%, host 10%, ...``."""
    others = sorted(((s, p) for s, p in v.shares_pct.items() if s != v.bound), key=lambda sp: -sp[1])
    rest = ", ".join(f"{VERDICT_STAGES[s]} {p:.0f}%" for s, p in others if p >= 0.5)
    head = f"rank {v.rank}: bound by {VERDICT_STAGES[v.bound]} ({v.shares_pct[v.bound]:.0f}% of the " \
           f"{v.step_ns / 1e6:.1f} ms step)"
    return f"{head} — {rest}" if rest else head
