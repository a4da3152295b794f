"""``compare(base, new) -> DiffResult``: two analysed runs side by side (SPEC §7).

Pure: it reads the two bundles' analysis results (the views, the distributed split, the advisor's
findings), matches rows by name through strings (:mod:`.align`) and returns data; rendering is in
:mod:`.document`, :mod:`.terminal` and :mod:`.tabular`.

What a :class:`DiffResult` holds:

=========== =====================================================================================
overall     per average step: ``step``, every breakdown key, ``computing``,
            ``communication_not_overlapped``, ``free`` (see :mod:`.overall`), base / new ms
tables      ``operators``, ``kernels``, ``modules``, ``memory``, ``runtime``: one
            :class:`~.tables.DiffTable` each, sorted by |diff|, with added / removed rows
findings    the advisor's findings matched by rule: resolved / new / still (None without advisor)
narrative   the few numbers that moved most (:mod:`.narrative`)
=========== =====================================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stepscope.analysis.bundle import Bundle
from stepscope.compare import sources
from stepscope.compare.align import NameMap
from stepscope.compare.findings import FindingChange, compare_findings, findings_of
from stepscope.compare.gate import GateResult, check_slower
from stepscope.compare.narrative import Change, narrative_items
from stepscope.compare.overall import OverallRow, SideOverall, overall_rows, side_overall
from stepscope.compare.tables import DiffTable, SideTable, diff_tables
from stepscope.errors import UsageError

#: table name → (unit, metric with device time, metric without)
TABLES: dict[str, tuple[str, str, str]] = {
    "operators": ("ms", "device self time", "host self time"),
    "kernels": ("ms", "total time", "total time"),
    "modules": ("ms", "device total time", "host total time"),
    "memory": ("MB", "allocated", "allocated"),
    "runtime": ("ms", "host time", "host time"),
}
#: analyses a diff reads (plus what the advisor reads when findings are compared)
NEEDED = ("breakdown", "operators", "kernels", "modules", "memory", "distributed")


@dataclass(frozen=True)
class Side:
    """What the diff says about one run."""

    source: str
    rank: int
    steps: list[int]
    device: str | None
    platform: str
    overall: SideOverall


@dataclass(frozen=True)
class DiffResult:
    """Everything ``stepscope diff`` reports (see the module docstring)."""

    base: Side
    new: Side
    overall: tuple[OverallRow, ...]
    tables: dict[str, DiffTable]
    findings: tuple[FindingChange, ...] | None
    narrative: list[Change]
    by_shapes: bool = False
    per_step: bool = True
    name_map_used: bool = False
    notes: list[str] = field(default_factory=list)

    def row(self, category: str) -> OverallRow:
        return next(r for r in self.overall if r.category == category)

    def gate(self, threshold_pct: float) -> GateResult:
        """The ``--fail-if-slower`` verdict on the average step."""
        step = self.row("step")
        return check_slower(step.base_ms, step.new_ms, threshold_pct)


def pick_rank(bundle: Bundle, rank: int | None) -> int:
    """The compared rank of a run: the one asked for, else the lowest."""
    have = sorted(bundle.ranks)
    if not have:
        raise UsageError(f"{bundle.trace.source}: the trace has no ranks to compare")
    if rank is None:
        return have[0]
    if rank not in bundle.ranks:
        raise UsageError(f"rank {rank} is not in {bundle.trace.source} (it has {have})")
    return rank


def _side(bundle: Bundle, rank: int) -> Side:
    rr = bundle.ranks[rank]
    if "breakdown" not in rr.results:
        reason = rr.skipped.get("breakdown", "the breakdown view did not run")
        raise UsageError(f"{bundle.trace.source}: cannot compare rank {rank}: {reason}")
    ov = side_overall(rr.results)
    dev = bundle.trace.device_of_rank(rank)
    info = bundle.trace.rank_info(rank)
    return Side(bundle.trace.source, rank, [p["step"] for p in ov.per_step], dev.name if dev else None,
                info.platform, ov)


def _tables(base: Bundle, new: Bundle, ranks: tuple[int, int], divisors: tuple[int, int],
            name_map: NameMap, by_shapes: bool) -> dict[str, DiffTable]:
    rb, rn = base.ranks[ranks[0]], new.ranks[ranks[1]]
    device = sources.has_device_time(rb.results) or sources.has_device_time(rn.results)

    def getter(b: Bundle, res: Any, rank: int, steps: int) -> dict[str, Callable[[], SideTable]]:
        r, s = res.results, res.skipped
        return {"operators": lambda: sources.operators(r, s, steps, by_shapes, device),
                "kernels": lambda: sources.kernels(r, s, steps),
                "modules": lambda: sources.modules(r, s, steps, device),
                "memory": lambda: sources.memory(r, s, steps),
                "runtime": lambda: sources.runtime_api(b.trace, rank, steps)}

    gb = getter(base, rb, ranks[0], divisors[0])
    gn = getter(new, rn, ranks[1], divisors[1])
    out: dict[str, DiffTable] = {}
    for name, (unit, with_dev, without) in TABLES.items():  # five tables, not rows
        metric = with_dev if device else without
        out[name] = _one_table(name, unit, metric, gb[name], gn[name], name_map, by_shapes)
    return out


def _one_table(name: str, unit: str, metric: str, base: Callable[[], SideTable], new: Callable[[], SideTable],
               name_map: NameMap, by_shapes: bool) -> DiffTable:
    reasons: list[str] = []
    sides: list[SideTable] = []
    for label, get in (("base", base), ("new", new)):
        try:
            sides.append(get())
        except sources.Missing as exc:
            reasons.append(f"{label}: {exc.reason}")
            sides.append(SideTable.empty())
    if len(reasons) == 2:
        return DiffTable.skipped_table(name, unit, metric, "; ".join(reasons))
    t = diff_tables(name, unit, metric, sides[0], sides[1], name_map,
                    by_shapes and name == "operators")
    return DiffTable(**{**t.__dict__, "skipped": "; ".join(reasons) or None})


def compare(base: Bundle, new: Bundle, *, base_rank: int | None = None, new_rank: int | None = None,
            name_map: NameMap | None = None, by_shapes: bool = False, per_step: bool = True,
            with_findings: bool = True) -> DiffResult:
    """Compare two analysed runs (one rank each) — see the module docstring.

    Args:
        base, new: bundles from :func:`stepscope.analysis.bundle.analyze` (breakdown required).
        base_rank, new_rank: the rank compared on each side (default: the lowest rank).
        name_map: renames applied before matching (cross-vendor names); none by default.
        by_shapes: match operators by name + input shapes.
        per_step: table values per average step (default) or totals over the selection.
        with_findings: also compare the advisor's findings (when the advisor is installed).
    """
    rb, rn = pick_rank(base, base_rank), pick_rank(new, new_rank)
    sb, sn = _side(base, rb), _side(new, rn)
    div = (max(sb.overall.step_count, 1), max(sn.overall.step_count, 1)) if per_step else (1, 1)
    nm = name_map or NameMap()
    tables = _tables(base, new, (rb, rn), div, nm, by_shapes)
    overall = overall_rows(sb.overall, sn.overall)
    found = None
    if with_findings:
        fb, fn = findings_of(base, rb), findings_of(new, rn)
        found = compare_findings(fb, fn) if fb is not None and fn is not None else None
    notes = []
    if sb.overall.split_source != sn.overall.split_source:
        notes.append(f"computing split from {sb.overall.split_source} (base) and {sn.overall.split_source} (new)")
    return DiffResult(sb, sn, overall, tables, found, narrative_items(overall, tables), by_shapes, per_step,
                      not nm.empty, notes)
