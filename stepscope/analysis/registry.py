"""Every analysis by name. Add an entry to plug a new analysis into analyze / JSON / reports.

``RANK_ANALYSES`` run once per rank (``fn(trace, rank)``); ``CLUSTER_ANALYSES`` run once per trace
after the per-rank ones (``fn(trace)``). An analysis that lacks data raises
:class:`~stepscope.analysis.base.NotApplicable`. Order is the order of the terminal report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stepscope.analysis.annotations import compute_annotations
from stepscope.analysis.breakdown import compute_breakdown
from stepscope.analysis.critical_path import compute_critical_path
from stepscope.analysis.distributed import compute_distributed
from stepscope.analysis.fusion import compute_fusion
from stepscope.analysis.idle import compute_idle
from stepscope.analysis.kernels import compute_kernels
from stepscope.analysis.launch import compute_launch
from stepscope.analysis.launch_config import compute_launch_config
from stepscope.analysis.memcpy import compute_memcpy
from stepscope.analysis.memory import compute_memory
from stepscope.analysis.modules import compute_modules
from stepscope.analysis.operators import compute_operators
from stepscope.analysis.overview import compute_overview
from stepscope.analysis.stragglers import compute_cluster
from stepscope.analysis.summary import compute_summary
from stepscope.analysis.sync import compute_sync

if TYPE_CHECKING:
    from stepscope.model.trace import Trace

RankAnalysis = Callable[["Trace", int], Any]
ClusterAnalysis = Callable[["Trace"], Any]

RANK_ANALYSES: dict[str, RankAnalysis] = {
    "summary": compute_summary,
    # the views (SPEC §4, TB parity)
    "overview": compute_overview,
    "breakdown": compute_breakdown,
    "operators": compute_operators,
    "kernels": compute_kernels,
    "memory": compute_memory,
    "modules": compute_modules,
    "annotations": compute_annotations,
    # deep analyses (SPEC §4 distributed, §5)
    "distributed": compute_distributed,
    "idle": compute_idle,
    "critical_path": compute_critical_path,
    "sync": compute_sync,
    "memcpy": compute_memcpy,
    "launch": compute_launch,
    "launch_config": compute_launch_config,
    "fusion": compute_fusion,
}

CLUSTER_ANALYSES: dict[str, ClusterAnalysis] = {
    "cluster": compute_cluster,
}
