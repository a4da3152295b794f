"""§12 JSON sections of the analyses behind the advisor's evidence (documented in docs/json.md,
"Evidence analyses"): the numbers a finding cites, per rank, whether or not a rule fires.

Times are ms per average step unless a name says otherwise; name lists are the top 10 by time
(``name``, ``count``, ``ms`` per step), as in a finding's evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepscope.analysis.registry import DATALOADER
from stepscope.report.json_deep import MS, named_list

if TYPE_CHECKING:
    from stepscope.analysis.bundle import RankResults
    from stepscope.model.trace import Trace


def dataloader_section(rr: RankResults, trace: Trace) -> dict[str, Any] | None:
    r = rr.get(DATALOADER)
    if r is None:
        return None
    n = max(r.step_count, 1)
    return {"loading": r.loading, "events_per_step": len(r.events) / n, "ms": r.events.total_ns / MS / n,
            "events": named_list(r.events, n)}


#: per-rank §12 keys owned by the evidence analyses
EVIDENCE_RANK_SECTIONS = {
    "dataloader": dataloader_section,
}
