"""Load and analyse one side of a diff: path → (optionally step-cut) trace → bundle.

``prepare_side`` is what the CLI and :func:`diff_paths` use; library callers that already hold
bundles call :func:`stepscope.compare.diff.compare` directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from stepscope.analysis.bundle import Bundle, analyze
from stepscope.compare.align import NameMap
from stepscope.compare.diff import NEEDED, DiffResult, compare
from stepscope.compare.select import parse_steps, select_steps
from stepscope.ingest import load
from stepscope.model.trace import Trace

Loader = Callable[[str | Path | None, bool, str | None, Sequence[int]], Trace]


@dataclass(frozen=True)
class SideSpec:
    """Which trace, span, rank and steps one side of a diff uses."""

    path: str | Path
    rank: int | None = None
    span: str | None = None
    steps: str | None = None  # "5-8,10"; None = every step


def _default_loader(path: str | Path | None, use_cache: bool, span: str | None, ranks: Sequence[int]) -> Trace:
    return load(path, use_cache=use_cache, span=span, ranks=list(ranks) or None)


def prepare_side(spec: SideSpec, *, use_cache: bool = True, with_findings: bool = True,
                 loader: Loader | None = None) -> Bundle:
    """Load the side's trace (only its rank when one is given), cut it to its steps, analyse it.

    Without findings only the analyses the diff reads run; with them, every analysis (the advisor
    reads them all).
    """
    ranks = [spec.rank] if spec.rank is not None else []
    trace = (loader or _default_loader)(spec.path, use_cache, spec.span, ranks)
    trace = select_steps(trace, parse_steps(spec.steps))
    return analyze(trace, names=None if with_findings else NEEDED)


def diff_paths(base: SideSpec, new: SideSpec, *, name_map: NameMap | None = None, by_shapes: bool = False,
               per_step: bool = True, with_findings: bool = True, use_cache: bool = True) -> DiffResult:
    """Load, analyse and compare two runs in one call."""
    bb = prepare_side(base, use_cache=use_cache, with_findings=with_findings)
    bn = prepare_side(new, use_cache=use_cache, with_findings=with_findings)
    return compare(bb, bn, base_rank=base.rank, new_rank=new.rank, name_map=name_map, by_shapes=by_shapes,
                   per_step=per_step, with_findings=with_findings)
