"""Load and analyse one side of a diff: path → (optionally step-cut) trace → bundle.

``sides_for`` is what the CLI and :func:`diff_paths` use: for large inputs each side is loaded and
analysed in its own process (fork), which returns only the small
:class:`~stepscope.compare.diff.SideData`, so two 1 GB traces take about the time of one. Library
callers that already hold bundles call :func:`stepscope.compare.diff.compare` directly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepscope.analysis.bundle import Bundle, analyze
from stepscope.compare.align import NameMap
from stepscope.compare.diff import NEEDED, DiffResult, SideData, compare_sides, side_data
from stepscope.compare.select import parse_steps, select_steps
from stepscope.ingest import load
from stepscope.model.trace import Trace
from stepscope.runtime.pool import fork_pool

#: combined input size from which the two sides are loaded and analysed in two processes
PARALLEL_ABOVE_BYTES = 32 << 20
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


def side_for(spec: SideSpec, *, by_shapes: bool = False, per_step: bool = True, with_findings: bool = True,
             use_cache: bool = True, loader: Loader | None = None) -> SideData:
    """One side, reduced to its :class:`~stepscope.compare.diff.SideData` (what a worker process returns)."""
    bundle = prepare_side(spec, use_cache=use_cache, with_findings=with_findings, loader=loader)
    return side_data(bundle, spec.rank, by_shapes=by_shapes, per_step=per_step, with_findings=with_findings)


def _input_bytes(path: str | Path) -> int:
    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())  # a run dir's few files
    return p.stat().st_size if p.exists() else 0


def worth_parallel(base: SideSpec, new: SideSpec) -> bool:
    """Two worker processes pay off for inputs of a few tens of MB and up, on Linux (fork) with ≥ 2 cores."""
    if not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2:
        return False
    return _input_bytes(base.path) + _input_bytes(new.path) >= PARALLEL_ABOVE_BYTES


def sides_for(base: SideSpec, new: SideSpec, *, parallel: bool | None = None, **kw: Any) -> tuple[SideData, SideData]:
    """Both sides, each loaded and analysed in its own process when :func:`worth_parallel` (or asked)."""
    if not (worth_parallel(base, new) if parallel is None else parallel):
        return side_for(base, **kw), side_for(new, **kw)
    kw = {**kw, "loader": None}  # no progress bars from two processes at once
    with fork_pool(2, None, None) as ex:
        fb, fn = ex.submit(side_for, base, **kw), ex.submit(side_for, new, **kw)
        return fb.result(), fn.result()


def diff_paths(base: SideSpec, new: SideSpec, *, name_map: NameMap | None = None, by_shapes: bool = False,
               per_step: bool = True, with_findings: bool = True, use_cache: bool = True,
               parallel: bool | None = None) -> DiffResult:
    """Load, analyse and compare two runs in one call."""
    sb, sn = sides_for(base, new, parallel=parallel, by_shapes=by_shapes, per_step=per_step,
                       with_findings=with_findings, use_cache=use_cache)
    return compare_sides(sb, sn, name_map=name_map, by_shapes=by_shapes, per_step=per_step)
