"""``compare(base, new) -> DiffResult``: two analysed runs side by side (SPEC §7).

Pure: it reads the two bundles' analysis results (the views, the distributed split, the advisor's
findings), matches rows by name through strings (:mod:`.align`) and returns data; rendering is in
:mod:`.document`, :mod:`.terminal` and :mod:`.tabular`.

What a :class:`DiffResult` holds:

=========== =====================================================================================
overall     per average step: ``step``, every breakdown key, ``computing``,
            ``communication_not_overlapped``, ``free`` (see :mod:`.overall`), base / new ms
tables      ``operators``, ``kernels``, ``modules``, ``memory``, ``runtime``, ``categories``: one
            :class:`~.tables.DiffTable` each, sorted by |diff|, with added / removed rows
findings    the advisor's findings matched by rule: resolved / new / still (None without advisor)
narrative   the few numbers that moved most (:mod:`.narrative`)
=========== =====================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stepscope.analysis.bundle import Bundle, with_bundle_memo
from stepscope.analysis.registry import BREAKDOWN
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
    "categories": ("ms", "device time", "device time"),
}
#: analyses a diff reads (plus what the advisor reads when findings are compared)
NEEDED = ("breakdown", "operators", "kernels", "categories", "modules", "memory", "distributed")


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


@dataclass(frozen=True)
class SideData:
    """One run reduced to what a diff needs: small, picklable, no trace (see :func:`side_data`)."""

    side: Side
    tables: dict[str, SideTable | str]  # a str says why the table is missing on this side
    has_device: bool
    findings: list[dict[str, Any]] | None


@with_bundle_memo
def side_data(bundle: Bundle, rank: int | None = None, *, by_shapes: bool = False, per_step: bool = True,
              with_findings: bool = True) -> SideData:
    """Extract one run's side of a diff from its bundle (the views' results, the advisor's findings)."""
    r = pick_rank(bundle, rank)
    rr = bundle.ranks[r]
    if rr.get(BREAKDOWN) is None:
        reason = rr.skipped.get(BREAKDOWN.name, "the breakdown view did not run")
        raise UsageError(f"{bundle.trace.source}: cannot compare rank {r}: {reason}")
    ov = side_overall(rr)
    dev = bundle.trace.device_of_rank(r)
    side = Side(bundle.trace.source, r, [p["step"] for p in ov.per_step], dev.name if dev else None,
                bundle.trace.rank_info(r).platform, ov)
    steps = max(ov.step_count, 1) if per_step else 1
    tables = sources.side_tables(rr, bundle.trace, steps, by_shapes)
    found = findings_of(bundle, r) if with_findings else None
    return SideData(side, tables, sources.has_device_time(rr), found)


def _one_table(name: str, base: SideTable | str, new: SideTable | str, device: bool, name_map: NameMap,
               by_shapes: bool) -> DiffTable:
    unit, with_dev, without = TABLES[name]
    metric = with_dev if device else without
    reasons = [f"{label}: {t}" for label, t in (("base", base), ("new", new)) if isinstance(t, str)]
    if len(reasons) == 2:
        return DiffTable.skipped_table(name, unit, metric, "; ".join(reasons))
    sides = [t if isinstance(t, SideTable) else SideTable.empty() for t in (base, new)]
    if not device:
        sides = [sources.host_view(name, t) for t in sides]
    t = diff_tables(name, unit, metric, sides[0], sides[1], name_map, by_shapes and name == "operators")
    return DiffTable(**{**t.__dict__, "skipped": "; ".join(reasons) or None})


def compare_sides(base: SideData, new: SideData, *, name_map: NameMap | None = None,
                  by_shapes: bool = False, per_step: bool = True) -> DiffResult:
    """The diff of two extracted sides (``by_shapes`` / ``per_step`` as they were extracted)."""
    nm = name_map or NameMap()
    device = base.has_device or new.has_device
    tables = {name: _one_table(name, base.tables.get(name, "not extracted"), new.tables.get(name, "not extracted"),
                               device, nm, by_shapes) for name in TABLES}
    overall = overall_rows(base.side.overall, new.side.overall)
    found = None
    if base.findings is not None and new.findings is not None:
        found = compare_findings(base.findings, new.findings)
    notes = []
    sb, sn = base.side.overall.split_source, new.side.overall.split_source
    if sb != sn:
        notes.append(f"computing split from {sb} (base) and {sn} (new)")
    return DiffResult(base.side, new.side, overall, tables, found, narrative_items(overall, tables), by_shapes,
                      per_step, not nm.empty, notes)


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
        with_findings: also compare the advisor's findings.
    """
    sb = side_data(base, base_rank, by_shapes=by_shapes, per_step=per_step, with_findings=with_findings)
    sn = side_data(new, new_rank, by_shapes=by_shapes, per_step=per_step, with_findings=with_findings)
    return compare_sides(sb, sn, name_map=name_map, by_shapes=by_shapes, per_step=per_step)
