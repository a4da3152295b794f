"""Every analysis, one entry each: its name, its function, the class of its result and the keys of
the JSON document (docs/json.md) its result fills. Add an entry to plug a new analysis into analyze,
the JSON document and the reports.

:class:`RankAnalysis` entries run once per rank (``compute(trace, rank)``), :class:`ClusterAnalysis`
entries after the per-rank ones, in two steps (``per_rank(trace, rank)`` a compact record of each
rank, ``combine(records)`` the result; ``compute(trace)`` both). An analysis that lacks data
raises :class:`~stepscope.analysis.base.NotApplicable`. The entries are also the typed keys of the
results: ``bundle.rank(0).get(KERNELS)`` is a :class:`~stepscope.analysis.kernels.KernelView` or
None, and mypy knows it. Order is the order of the terminal report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from stepscope.analysis.all_to_all import AllToAll, all_to_all_record, combine_all_to_all
from stepscope.analysis.annotations import AnnotationView, compute_annotations
from stepscope.analysis.arrivals import Arrivals, arrivals_record, combine_arrivals
from stepscope.analysis.breakdown import StepBreakdown, compute_breakdown
from stepscope.analysis.caching_allocator import CachingAllocatorResult, compute_caching_allocator
from stepscope.analysis.categories import CategoryView, compute_categories
from stepscope.analysis.comm_matrix import CommMatrix, combine_comm_matrix, comm_matrix_record
from stepscope.analysis.compiled import CompiledResult, compute_compiled
from stepscope.analysis.convolutions import ConvolutionResult, compute_convolutions
from stepscope.analysis.cpu_optimizer import CpuOptimizer, compute_cpu_optimizer
from stepscope.analysis.critical_path import CriticalPath, compute_critical_path
from stepscope.analysis.dataloader import DataLoaderResult, compute_dataloader
from stepscope.analysis.distributed import DistributedResult, compute_distributed
from stepscope.analysis.exposed_comm import ExposedComm, combine_exposed, exposed_record
from stepscope.analysis.fp64 import Float64Ops, compute_fp64
from stepscope.analysis.fusion import FusionResult, compute_fusion
from stepscope.analysis.gemm_dims import GemmDimsResult, compute_gemm_dims
from stepscope.analysis.graphs import GraphResult, compute_graphs
from stepscope.analysis.host_ops import HostOpsResult, compute_host_ops
from stepscope.analysis.host_stalls import HostStalls, compute_host_stalls
from stepscope.analysis.idle import IdleResult, compute_idle
from stepscope.analysis.input_shapes import InputShapesResult, compute_input_shapes
from stepscope.analysis.kernels import KernelView, compute_kernels
from stepscope.analysis.kv_cache import GrowingCache, compute_kv_cache
from stepscope.analysis.launch import LaunchResult, compute_launch
from stepscope.analysis.launch_config import LaunchConfigResult, compute_launch_config
from stepscope.analysis.memcpy import MemcpyResult, compute_memcpy
from stepscope.analysis.memory import MemoryView, compute_memory
from stepscope.analysis.modules import ModuleTable, compute_modules
from stepscope.analysis.operators import OperatorView, compute_operators
from stepscope.analysis.overview import Overview, compute_overview
from stepscope.analysis.phases import PhaseResult, compute_phases
from stepscope.analysis.pipeline import Pipeline, combine_pipeline
from stepscope.analysis.pipeline_records import pipeline_record
from stepscope.analysis.profiler_cost import ProfilerCost, compute_profiler_cost
from stepscope.analysis.roofline import RooflineView, compute_roofline
from stepscope.analysis.slow_links import SlowLinks, combine_slow_links, links_record
from stepscope.analysis.software import SoftwareResult, compute_software
from stepscope.analysis.stragglers import ClusterResult, cluster_record, combine_cluster
from stepscope.analysis.summary import Summary, compute_summary
from stepscope.analysis.sync import SyncResult, compute_sync
from stepscope.analysis.tensor_cores import TensorCoreResult, compute_tensor_cores
from stepscope.analysis.whatif.job_whatif import JobWhatIf, combine_job_whatif, job_record
from stepscope.analysis.whatif.remedies import Remedies, compute_remedies
from stepscope.analysis.zero_grad import ZeroGradResult, compute_zero_grad
from stepscope.model.trace import Trace

T = TypeVar("T", covariant=True)


@dataclass(frozen=True)
class RankAnalysis(Generic[T]):
    """A per-rank analysis and the typed key of its result."""

    name: str
    compute: Callable[[Trace, int], T]
    result: type[T]
    json_keys: tuple[str, ...]  # the per-rank keys of the JSON document made from its result
    #: how long it runs, relatively (0: short; 1-3: passes over every event, 3: the what-if replays),
    #: as measured on large traces (docs/benchmarks.md): when a rank's analyses run side by side the
    #: longest start first and the short ones fill in around them, the order results never depend on
    cost: int = 0
    #: it reads the device's work (kernels, copies, syncs, launches, GPU memory): on a rank without a
    #: device (a CPU-only run) it has nothing to say but that (:data:`~stepscope.analysis.platform.NO_DEVICE`)
    device: bool = False


@dataclass(frozen=True)
class ClusterAnalysis(Generic[T]):
    """A cross-rank analysis (run after the per-rank ones) and the typed key of its result, in two
    steps: ``per_rank(trace, rank)`` makes a rank's compact, picklable record (run where the rank is
    read: in a map worker on the map-reduce path), ``combine(records)`` the result from every rank's
    record, in rank order (run in the driver). ``compute(trace)`` runs both on a whole trace."""

    name: str
    per_rank: Callable[[Trace, int], Any]
    combine: Callable[[Mapping[int, Any]], T]
    result: type[T]
    json_keys: tuple[str, ...]  # the top-level keys of the JSON document made from its result

    def compute(self, trace: Trace) -> T:
        return self.combine({r: self.per_rank(trace, r) for r in trace.rank_ids})


SUMMARY = RankAnalysis("summary", compute_summary, Summary, ("event_counts", "gpu"))
# the views (SPEC §4, TB parity)
OVERVIEW = RankAnalysis("overview", compute_overview, Overview, ("overview", "gpu"), cost=2)
BREAKDOWN = RankAnalysis("breakdown", compute_breakdown, StepBreakdown, ("steps",))
OPERATORS = RankAnalysis("operators", compute_operators, OperatorView, ("operators",), cost=1)
KERNELS = RankAnalysis("kernels", compute_kernels, KernelView, ("kernels", "collective_kernels"), cost=1, device=True)
OP_CATEGORIES = RankAnalysis("categories", compute_categories, CategoryView, ("categories",), cost=1, device=True)
ROOFLINE = RankAnalysis("roofline", compute_roofline, RooflineView, ("roofline",),
                        device=True)  # FLOPs, bytes, bound, MFU
MEMORY = RankAnalysis("memory", compute_memory, MemoryView, ("memory",))
MODULES = RankAnalysis("modules", compute_modules, ModuleTable, ("modules",))
ANNOTATIONS = RankAnalysis("annotations", compute_annotations, AnnotationView, ("annotations",))
# deep analyses (SPEC §4 distributed, §5)
DISTRIBUTED = RankAnalysis("distributed", compute_distributed, DistributedResult, ("distributed",))
IDLE = RankAnalysis("idle", compute_idle, IdleResult, ("idle",), cost=1, device=True)
CRITICAL_PATH = RankAnalysis("critical_path", compute_critical_path, CriticalPath, ("critical_path",), cost=2)
SYNC = RankAnalysis("sync", compute_sync, SyncResult, ("sync",), device=True)
MEMCPY = RankAnalysis("memcpy", compute_memcpy, MemcpyResult, ("memcpy",), device=True)
LAUNCH = RankAnalysis("launch", compute_launch, LaunchResult, ("launch",), device=True)
LAUNCH_CONFIG = RankAnalysis("launch_config", compute_launch_config, LaunchConfigResult, ("launch_config",),
                             device=True)
FUSION = RankAnalysis("fusion", compute_fusion, FusionResult, ("fusion",), device=True)
GRAPHS = RankAnalysis("graphs", compute_graphs, GraphResult, ("graphs",), device=True)  # CUDA / HIP graph replays
COMPILED = RankAnalysis("compiled", compute_compiled, CompiledResult, ("compiled",))  # torch.compile kernels
PHASES = RankAnalysis("phases", compute_phases, PhaseResult, ("phases",))  # inference prefill / decode
REMEDIES = RankAnalysis("remedies", compute_remedies, Remedies, ("remedies",), cost=3)  # what-if: each remedy replayed
# the step without the profiler's own cost per recorded host event (replayed where the host bounds it)
PROFILER_COST = RankAnalysis("profiler_cost", compute_profiler_cost, ProfilerCost, ("profiler_cost",), cost=2,
                             device=True)
# the evidence the advisor's rules weigh, each shown as a view too
DATALOADER = RankAnalysis("dataloader", compute_dataloader, DataLoaderResult, ("dataloader",))
TENSOR_CORES = RankAnalysis("tensor_cores", compute_tensor_cores, TensorCoreResult, ("tensor_cores",), device=True)
CONVOLUTIONS = RankAnalysis("convolutions", compute_convolutions, ConvolutionResult, ("convolutions",), device=True)
GEMM_DIMS = RankAnalysis("gemm_dims", compute_gemm_dims, GemmDimsResult, ("gemm_dims",), device=True)
HOST_OPS = RankAnalysis("host_ops", compute_host_ops, HostOpsResult, ("host_ops",), device=True)
ZERO_GRAD = RankAnalysis("zero_grad", compute_zero_grad, ZeroGradResult, ("zero_grad",), device=True)
CACHING_ALLOCATOR = RankAnalysis("caching_allocator", compute_caching_allocator, CachingAllocatorResult,
                                 ("caching_allocator",), device=True)
INPUT_SHAPES = RankAnalysis("input_shapes", compute_input_shapes, InputShapesResult, ("input_shapes",))
SOFTWARE = RankAnalysis("software", compute_software, SoftwareResult, ("software",))
# a CPU-only rank's optimizer steps: the ops they run (the fusion view reads a device's optimizer kernels)
CPU_OPTIMIZER = RankAnalysis("cpu_optimizer", compute_cpu_optimizer, CpuOptimizer, ("cpu_optimizer",))
# the driving host thread stalled inside its ops: calls far slower than the same op on the same shapes
HOST_STALLS = RankAnalysis("host_stalls", compute_host_stalls, HostStalls, ("host_stalls",))
# a cache grown by concatenation every token (autoregressive decoding's keys and values): shapes that change
KV_CACHE = RankAnalysis("kv_cache", compute_kv_cache, GrowingCache, ("kv_cache",))
# ops on float64 tensors in the steps (numpy's default dtype, a .double() loss): half the float32 rate or less
FP64 = RankAnalysis("fp64", compute_fp64, Float64Ops, ("fp64",))

CLUSTER = ClusterAnalysis("cluster", cluster_record, combine_cluster, ClusterResult, ("cluster",))
COMM_MATRIX = ClusterAnalysis("comm_matrix", comm_matrix_record, combine_comm_matrix, CommMatrix,
                              ("cluster",))  # cluster.comm_matrix
ARRIVALS = ClusterAnalysis("arrivals", arrivals_record, combine_arrivals, Arrivals, ("cluster",))  # cluster.arrivals
SLOW_LINKS = ClusterAnalysis("slow_links", links_record, combine_slow_links, SlowLinks,
                             ("cluster",))  # cluster.slow_links
# what-if: the job replayed with each culprit fixed (the straggler-rank rule's gain) and with each standard
# remedy on every rank (the job's gain of a replayed remedy finding)
JOB_WHATIF = ClusterAnalysis("job_whatif", job_record, combine_job_whatif, JobWhatIf, ("cluster",))
PIPELINE = ClusterAnalysis("pipeline", pipeline_record, combine_pipeline, Pipeline, ("cluster",))  # cluster.pipeline
ALL_TO_ALL = ClusterAnalysis("all_to_all", all_to_all_record, combine_all_to_all, AllToAll,
                             ("cluster",))  # cluster.all_to_all
# the distributed analysis's exposed / overlapped communication, one table of every rank and step
EXPOSED_COMM = ClusterAnalysis("exposed_comm", exposed_record, combine_exposed, ExposedComm,
                               ("cluster",))  # cluster.exposed_comm

RANK_ANALYSES: tuple[RankAnalysis[object], ...] = (
    SUMMARY, OVERVIEW, BREAKDOWN, OPERATORS, KERNELS, OP_CATEGORIES, ROOFLINE, MEMORY, MODULES, ANNOTATIONS,
    DISTRIBUTED, IDLE, CRITICAL_PATH, SYNC, MEMCPY, LAUNCH, LAUNCH_CONFIG, FUSION, GRAPHS, COMPILED, PHASES,
    REMEDIES, PROFILER_COST,
    DATALOADER, TENSOR_CORES, CONVOLUTIONS, GEMM_DIMS, HOST_OPS, ZERO_GRAD, CACHING_ALLOCATOR, INPUT_SHAPES, SOFTWARE,
    CPU_OPTIMIZER, HOST_STALLS, KV_CACHE, FP64,
)
CLUSTER_ANALYSES: tuple[ClusterAnalysis[object], ...] = (CLUSTER, COMM_MATRIX, ARRIVALS, SLOW_LINKS, JOB_WHATIF,
                                                            PIPELINE, ALL_TO_ALL, EXPOSED_COMM)
