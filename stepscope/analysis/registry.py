"""Every analysis by name. Add an entry to plug a new analysis into analyze / JSON / reports.

``RANK_ANALYSES`` run once per rank (``fn(trace, rank)``); ``CLUSTER_ANALYSES`` run once per trace
after the per-rank ones (``fn(trace, bundle)``). An analysis that lacks data raises
:class:`~stepscope.analysis.base.NotApplicable`. Order is the order of the terminal report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stepscope.analysis.summary import compute_summary

if TYPE_CHECKING:
    from stepscope.analysis.bundle import Bundle
    from stepscope.model.trace import Trace

RankAnalysis = Callable[["Trace", int], Any]
ClusterAnalysis = Callable[["Trace", "Bundle"], Any]

RANK_ANALYSES: dict[str, RankAnalysis] = {
    "summary": compute_summary,
}

CLUSTER_ANALYSES: dict[str, ClusterAnalysis] = {}
