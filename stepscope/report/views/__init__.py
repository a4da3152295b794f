"""Terminal renderers, one per analysis result: ``RENDERERS[name](rank_results, console, top)``.

Order here is the order of the terminal report (overview first). Add an entry per view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rich.console import Console

from stepscope.analysis.bundle import Bundle, RankResults
from stepscope.analysis.platform import platform_of
from stepscope.analysis.registry import (
    ALL_TO_ALL,
    ANNOTATIONS,
    ARRIVALS,
    BREAKDOWN,
    CACHING_ALLOCATOR,
    CLUSTER,
    COMM_MATRIX,
    COMPILED,
    CONVOLUTIONS,
    CPU_OPTIMIZER,
    CRITICAL_PATH,
    DATALOADER,
    EXPOSED_COMM,
    FP64,
    FUSION,
    GEMM_DIMS,
    GRAPHS,
    HOST_OPS,
    HOST_STALLS,
    IDLE,
    INPUT_SHAPES,
    JOB_WHATIF,
    KERNELS,
    KV_CACHE,
    LAUNCH,
    LAUNCH_CONFIG,
    MEMCPY,
    MEMORY,
    MODULES,
    OP_CATEGORIES,
    OPERATORS,
    OVERVIEW,
    PHASES,
    PIPELINE,
    PROFILER_COST,
    REMEDIES,
    ROOFLINE,
    SLOW_LINKS,
    SOFTWARE,
    SUMMARY,
    SYNC,
    TENSOR_CORES,
    ZERO_GRAD,
    ClusterAnalysis,
    RankAnalysis,
)
from stepscope.report.verdict_texts import cause_words
from stepscope.report.views.annotations import render_annotations
from stepscope.report.views.arrivals import render_arrivals, render_job_whatif, render_slow_links
from stepscope.report.views.breakdown import render_breakdown
from stepscope.report.views.caching_allocator import render_caching_allocator
from stepscope.report.views.categories import render_categories
from stepscope.report.views.convolutions import render_convolutions
from stepscope.report.views.cpu_optimizer import render_cpu_optimizer
from stepscope.report.views.critical_path import render_critical_path
from stepscope.report.views.dataloader import render_dataloader
from stepscope.report.views.device import render_compiled, render_graphs, render_phases
from stepscope.report.views.distributed import (
    render_cluster,
    render_comm_matrix,
    render_exposed_comm,
    show_distributed,
)
from stepscope.report.views.fp64 import render_fp64
from stepscope.report.views.fusion import render_fusion
from stepscope.report.views.gemm_dims import render_gemm_dims
from stepscope.report.views.host_ops import render_host_ops
from stepscope.report.views.host_stalls import render_host_stalls
from stepscope.report.views.idle import render_idle
from stepscope.report.views.input_shapes import render_input_shapes
from stepscope.report.views.kernels import render_kernels
from stepscope.report.views.kv_cache import render_kv_cache
from stepscope.report.views.launch import render_launch
from stepscope.report.views.launch_config import render_launch_config
from stepscope.report.views.memcpy import render_memcpy
from stepscope.report.views.memory import render_memory
from stepscope.report.views.modules import render_modules
from stepscope.report.views.operators import render_operators
from stepscope.report.views.overview import render_overview
from stepscope.report.views.pipeline import render_all_to_all, render_pipeline
from stepscope.report.views.profiler_cost import render_profiler_cost
from stepscope.report.views.remedies import render_remedies
from stepscope.report.views.roofline import render_roofline
from stepscope.report.views.software import render_software
from stepscope.report.views.summary import render_summary
from stepscope.report.views.sync import render_sync
from stepscope.report.views.tensor_cores import render_tensor_cores
from stepscope.report.views.zero_grad import render_zero_grad

T = TypeVar("T")

#: renders one rank's result of a view's analysis in its platform's words (``analysis.platform``:
#: ``cuda``, ``rocm``, ``ascend``, ``cpu``, ``+native``); False when that rank has no such result
RankView = Callable[[RankResults, Console, int, str], bool]
#: renders the whole-trace result of a cluster analysis; False when there is none
ClusterView = Callable[[Bundle, Console, int], bool]


def rank_view(key: RankAnalysis[T], render: Callable[[T, Console, int], None]) -> RankView:
    """The view of ``key``'s result; mypy checks that ``render`` takes that result's class."""
    return worded_view(key, lambda result, console, top, platform: render(result, console, top))


def worded_view(key: RankAnalysis[T], render: Callable[[T, Console, int, str], None]) -> RankView:
    """The view of ``key``'s result, its words said for the rank's platform (``render`` gets it and
    passes its prose through :func:`stepscope.report.platform_texts.dialect`, as the findings do)."""

    def show(rr: RankResults, console: Console, top: int, platform: str) -> bool:
        result = rr.get(key)
        if result is None:
            return False
        render(result, console, top, platform)
        return True

    return show


def cluster_view(key: ClusterAnalysis[T], render: Callable[[T, Console, int], None]) -> ClusterView:
    def show(bundle: Bundle, console: Console, top: int) -> bool:
        result = bundle.cluster_result(key)
        if result is None:
            return False
        render(result, console, top)
        return True

    return show


def _arrivals_view(bundle: Bundle, console: Console, top: int) -> bool:
    """The arrivals, each culprit's cause in its platform's words (the lowest rank's)."""
    result = bundle.cluster_result(ARRIVALS)
    if result is None:
        return False
    render_arrivals(result, console, top, cause_words(platform_of(bundle.trace, min(bundle.ranks))))
    return True


RENDERERS: dict[str, RankView] = {
    "summary": rank_view(SUMMARY, render_summary),
    # the views (SPEC §4, TB parity)
    "overview": worded_view(OVERVIEW, render_overview),
    "breakdown": rank_view(BREAKDOWN, render_breakdown),
    "operators": rank_view(OPERATORS, render_operators),
    "kernels": worded_view(KERNELS, render_kernels),
    "categories": rank_view(OP_CATEGORIES, render_categories),
    "roofline": rank_view(ROOFLINE, render_roofline),
    "memory": rank_view(MEMORY, render_memory),
    "modules": rank_view(MODULES, render_modules),
    "annotations": rank_view(ANNOTATIONS, render_annotations),
    # deep analyses (SPEC §4 distributed, §5)
    "distributed": show_distributed,  # or the communication of collectives run on the host
    "idle": rank_view(IDLE, render_idle),
    "critical_path": rank_view(CRITICAL_PATH, render_critical_path),
    "sync": rank_view(SYNC, render_sync),
    "memcpy": rank_view(MEMCPY, render_memcpy),
    "launch": rank_view(LAUNCH, render_launch),
    "launch_config": worded_view(LAUNCH_CONFIG, render_launch_config),
    "fusion": rank_view(FUSION, render_fusion),
    "graphs": rank_view(GRAPHS, render_graphs),
    "compiled": rank_view(COMPILED, render_compiled),
    "phases": rank_view(PHASES, render_phases),
    "remedies": rank_view(REMEDIES, render_remedies),
    "profiler_cost": rank_view(PROFILER_COST, render_profiler_cost),
    # the evidence the advisor's rules weigh
    "dataloader": rank_view(DATALOADER, render_dataloader),
    "tensor_cores": worded_view(TENSOR_CORES, render_tensor_cores),
    "convolutions": worded_view(CONVOLUTIONS, render_convolutions),
    "gemm_dims": rank_view(GEMM_DIMS, render_gemm_dims),
    "host_ops": rank_view(HOST_OPS, render_host_ops),
    "zero_grad": rank_view(ZERO_GRAD, render_zero_grad),
    "caching_allocator": rank_view(CACHING_ALLOCATOR, render_caching_allocator),
    "input_shapes": rank_view(INPUT_SHAPES, render_input_shapes),
    "software": worded_view(SOFTWARE, render_software),
    "cpu_optimizer": rank_view(CPU_OPTIMIZER, render_cpu_optimizer),
    "host_stalls": rank_view(HOST_STALLS, render_host_stalls),
    "kv_cache": rank_view(KV_CACHE, render_kv_cache),
    "fp64": rank_view(FP64, render_fp64),
}

#: cluster-level renderers
CLUSTER_RENDERERS: dict[str, ClusterView] = {
    "cluster": cluster_view(CLUSTER, render_cluster),
    "comm_matrix": cluster_view(COMM_MATRIX, render_comm_matrix),
    "arrivals": _arrivals_view,
    "slow_links": cluster_view(SLOW_LINKS, render_slow_links),
    "job_whatif": cluster_view(JOB_WHATIF, render_job_whatif),
    "pipeline": cluster_view(PIPELINE, render_pipeline),
    "all_to_all": cluster_view(ALL_TO_ALL, render_all_to_all),
    "exposed_comm": cluster_view(EXPOSED_COMM, render_exposed_comm),
}
