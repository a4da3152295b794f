"""Terminal renderers, one per analysis result: ``RENDERERS[name](result, console, top)``.

Order here is the order of the terminal report (overview first). Add an entry per view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console

from stepscope.report.views.annotations import render_annotations
from stepscope.report.views.breakdown import render_breakdown
from stepscope.report.views.critical_path import render_critical_path
from stepscope.report.views.distributed import render_cluster, render_distributed
from stepscope.report.views.fusion import render_fusion
from stepscope.report.views.idle import render_idle
from stepscope.report.views.kernels import render_kernels
from stepscope.report.views.launch import render_launch
from stepscope.report.views.launch_config import render_launch_config
from stepscope.report.views.memcpy import render_memcpy
from stepscope.report.views.memory import render_memory
from stepscope.report.views.modules import render_modules
from stepscope.report.views.operators import render_operators
from stepscope.report.views.overview import render_overview
from stepscope.report.views.summary import render_summary
from stepscope.report.views.sync import render_sync

Renderer = Callable[[Any, Console, int], None]

RENDERERS: dict[str, Renderer] = {
    "summary": render_summary,
    # the views (SPEC §4, TB parity)
    "overview": render_overview,
    "breakdown": render_breakdown,
    "operators": render_operators,
    "kernels": render_kernels,
    "memory": render_memory,
    "modules": render_modules,
    "annotations": render_annotations,
    # deep analyses (SPEC §4 distributed, §5)
    "distributed": render_distributed,
    "idle": render_idle,
    "critical_path": render_critical_path,
    "sync": render_sync,
    "memcpy": render_memcpy,
    "launch": render_launch,
    "launch_config": render_launch_config,
    "fusion": render_fusion,
}

#: cluster-level renderers: ``CLUSTER_RENDERERS[name](result, console, top)``
CLUSTER_RENDERERS: dict[str, Renderer] = {
    "cluster": render_cluster,
}
