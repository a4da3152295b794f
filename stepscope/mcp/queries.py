"""The answers of the computing tools: SQL, a timeline window, a diff of two traces, what-if.

Each calls the engine function its command line calls — ``stepscope sql`` (``query.connect``),
the web UI's timeline (``analysis.timeline.timeline_window``), ``stepscope diff``
(``compare.diff.compare`` → ``compare.document.to_json``), ``stepscope whatif``
(``analysis.whatif.options.transforms_of`` → ``simulate`` → ``report.whatif_view.whatif_dict``) —
and returns plain data with the units in the key names (times in trace nanoseconds, as the model
holds them, or milliseconds where the document says ``_ms``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import tb_step_windows
from stepscope.analysis.platform import has_device
from stepscope.analysis.timeline import timeline_window
from stepscope.analysis.whatif.options import check_ranks, refuse_without_device, transforms_of
from stepscope.analysis.whatif.simulate import simulate
from stepscope.compare.diff import compare
from stepscope.compare.document import to_json as diff_json
from stepscope.errors import UsageError
from stepscope.mcp.cache import Loaded
from stepscope.model.trace import Trace
from stepscope.query import TABLES, connect
from stepscope.report.whatif_view import whatif_dict

#: the most rows one SQL answer carries
MAX_SQL_ROWS = 1000
#: the most events one timeline window lists (more: per-bucket aggregates instead)
MAX_WINDOW_ITEMS = 2000


def sql(loaded: Loaded, query: str, limit: int = 100) -> dict[str, Any]:
    """Run ``query`` (DuckDB) over the trace's tables; the first ``limit`` rows. The connection
    cannot touch files (``enable_external_access`` off and locked): only the trace is queried."""
    import duckdb

    if not 1 <= limit <= MAX_SQL_ROWS:
        raise UsageError(f"limit {limit}: from 1 to {MAX_SQL_ROWS}")
    con = connect(loaded.trace)
    try:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        try:
            rel = con.sql(query)
            if rel is None:
                return {"columns": [], "types": [], "rows": [], "row_count": 0, "truncated": False}
            columns, types = list(rel.columns), [str(t) for t in rel.types]
            rows = rel.limit(limit + 1).fetchall()
        except duckdb.Error as exc:
            raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    return {"columns": columns, "types": types, "rows": [list(r) for r in rows[:limit]],
            "row_count": min(len(rows), limit), "truncated": len(rows) > limit}


def sql_tables() -> list[str]:
    """The tables and views a query may name (``stepscope sql --help``)."""
    return [*TABLES, "strings", "kinds", "ev", "kernels"]


def _rank_of(trace: Trace, rank: int | None) -> int:
    ranks = [int(r) for r in trace.rank_ids]
    if rank is None:
        if not ranks:
            raise UsageError(f"{trace.source}: the trace has no ranks")
        return ranks[0]
    if rank not in ranks:
        raise UsageError(f"rank {rank} is not in the trace (ranks: {', '.join(map(str, ranks))})")
    return rank


def _extent(trace: Trace, rank: int) -> tuple[int, int]:
    """The rank's first start and last end (trace ns)."""
    sl = trace.rank_slice(rank)
    ts, dur = trace.events["ts_ns"][sl], trace.events["dur_ns"][sl]
    if not len(ts):
        return 0, 1
    start = int(ts.min())
    return start, max(int((ts + np.maximum(dur, 0)).max()), start + 1)


def _step_window(trace: Trace, rank: int, step: int) -> tuple[int, int]:
    """The step's window as the breakdown measures it (the web UI's step markers)."""
    w = tb_step_windows(trace, rank)
    hit = np.flatnonzero(w.step == step)
    if not len(hit):
        known = ", ".join(str(int(s)) for s in w.step[w.step >= 0][:50])
        raise UsageError(f"step {step} is not a step of rank {rank} (steps: {known or 'none'})")
    return int(w.start_ns[hit[0]]), int(w.end_ns[hit[0]])


def window_bounds(trace: Trace, rank: int, step: int | None, start_ns: int | None,
                  end_ns: int | None) -> tuple[int, int]:
    """[start, end) of a timeline request: a step's window, or the given bounds, each defaulting to
    the rank's extent."""
    if step is not None:
        if start_ns is not None or end_ns is not None:
            raise UsageError("give either step or start_ns / end_ns, not both")
        return _step_window(trace, rank, step)
    lo, hi = _extent(trace, rank)
    a, b = lo if start_ns is None else int(start_ns), hi if end_ns is None else int(end_ns)
    if b <= a:
        raise UsageError(f"empty window: end_ns {b} <= start_ns {a}")
    return a, b


def timeline(loaded: Loaded, rank: int | None = None, step: int | None = None, start_ns: int | None = None,
             end_ns: int | None = None, max_items: int = 200, buckets: int = 20) -> dict[str, Any]:
    """One window of a rank's timeline: its events when at most ``max_items`` fall in it, else
    per-bucket aggregates (busy fraction, count, dominant name per track), plus steps, flows, counters."""
    if not 1 <= max_items <= MAX_WINDOW_ITEMS:
        raise UsageError(f"max_items {max_items}: from 1 to {MAX_WINDOW_ITEMS}")
    if not 1 <= buckets <= 500:
        raise UsageError(f"buckets {buckets}: from 1 to 500")
    trace = loaded.trace
    r = _rank_of(trace, rank)
    a, b = window_bounds(trace, r, step, start_ns, end_ns)
    with loaded.bundle.memo.active():
        out = timeline_window(trace, r, a, b, max_items=max_items, buckets=buckets).to_dict()
    return {"source": trace.source, "step": step, **out}


#: what the diff keeps of a finding (its evidence is one ``findings`` call away on either trace)
DIFF_FINDING_KEYS = ("rule", "status", "title", "base_severity", "new_severity", "base_est_gain_ms",
                     "new_est_gain_ms")


def diff(base: Loaded, new: Loaded, top: int = 10) -> dict[str, Any]:
    """``stepscope diff BASE NEW --json`` with each table cut to its ``top`` rows by |difference|,
    the names only in one side cut to ``top`` too (``added_total`` / ``removed_total`` count them),
    and the findings' headlines (resolved / new / still)."""
    top = max(0, top)
    doc = diff_json(compare(base.bundle, new.bundle), top=top)
    for meta in doc["tables"].values():
        for key in ("added", "removed"):
            names = meta.get(key) or []
            meta[key], meta[f"{key}_total"] = names[:top], len(names)
    if doc.get("findings") is not None:
        doc["findings"] = [{k: f.get(k) for k in DIFF_FINDING_KEYS} for f in doc["findings"]]
    return {"base_source": base.trace.source, "new_source": new.trace.source, **doc}


def whatif(loaded: Loaded, rank: int | None = None, workers: int | str | None = None,
           host_overhead: float | None = None,
           host_in: list[str] | None = None, drop_syncs: str | None = None, pin_copies: bool = False,
           scale: list[str] | None = None, overlap_comm: bool = False, fix_rank: list[int] | None = None,
           batch: str | None = None, fused_optimizer: bool = False, no_compile: bool = False,
           batch_copies: bool = False, unprofiled_us: float | None = None, amp: bool = False,
           bf16: bool = False, remedy_flags: tuple[str, ...] = ()) -> dict[str, Any]:
    """``stepscope whatif PATH ... --json``: every step replayed with the changes applied together."""
    changes = transforms_of(workers, drop_syncs, pin_copies, tuple(scale or ()), host_overhead,
                            tuple(host_in or ()), overlap_comm, tuple(fix_rank or ()), batch, fused_optimizer,
                            no_compile, batch_copies, unprofiled_us, amp, bf16, remedy_flags)
    trace = loaded.trace
    check_ranks(tuple(fix_rank or ()), trace.rank_ids)
    ranks = None if rank is None else [_rank_of(trace, rank)]
    refuse_without_device(changes, any(has_device(trace, r) for r in (ranks or trace.rank_ids)))
    with loaded.bundle.memo.active():
        try:
            return whatif_dict(simulate(trace, changes, ranks), trace.source)
        except NotApplicable as exc:
            raise UsageError(f"no what-if for this trace: {exc.reason}", trace.source) from None
