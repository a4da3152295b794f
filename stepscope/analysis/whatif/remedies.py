"""What each standard remedy would save on a rank, by replaying its steps with the remedy applied.

These are the advisor's gains: a finding's estimated gain is the replayed saving of its remedy (on
the step's critical path, so time hidden under other work is never counted), with the remedy's
basis shown beside it.

Every remedy is replayed, the kernel remedies included (Tensor Cores, fuller grids, fusion ...). A rule
whose speed-up model is set to other values than the remedy's defaults weighs its model instead by its
kernels' **on-path share** (:data:`KERNEL_SETS`: the share of their time that lies on the step's critical
path, :meth:`~stepscope.analysis.critical_path.CriticalPath.on_path_share`; 1 on a device-bound step, 0
when the device only waits for the host): time hidden under host work is never counted either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank
from stepscope.analysis.attention_fallback import math_attention
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.convolutions import FALLBACK, compute_convolutions
from stepscope.analysis.critical_path import compute_critical_path
from stepscope.analysis.elementwise_runs import compute_elementwise_runs
from stepscope.analysis.gemm_dims import compute_gemm_dims
from stepscope.analysis.launch_config import compute_launch_config
from stepscope.analysis.platform import has_device
from stepscope.analysis.profiler_cost import compute_profiler_cost
from stepscope.analysis.tensor_cores import compute_tensor_cores
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.algo_search import NoAlgoSearch
from stepscope.analysis.whatif.channels_last import (
    NCHW_VARIANT_FACTOR,
    NCHW_VARIANT_PATTERN,
    TRANSFORM_PATTERN,
    ChannelsLast,
)
from stepscope.analysis.whatif.graph import StepGraph, require_linked, step_graph
from stepscope.analysis.whatif.host_work import MoveHostWork
from stepscope.analysis.whatif.kernel_remedies import (
    GEMM_ALIGN,
    FillSms,
    FusedAttention,
    FuseElementwise,
    PadGemms,
)
from stepscope.analysis.whatif.launch_blocking import NoLaunchBlocking
from stepscope.analysis.whatif.loop_code import MoveLoopCode
from stepscope.analysis.whatif.optimizer import FusedOptimizer, fused_basis_of
from stepscope.analysis.whatif.precision import Bf16OverTf32, MixedPrecision, amp_speedup_of, bf16_speedup_of
from stepscope.analysis.whatif.replay import Durations, replay_all
from stepscope.analysis.whatif.unprofiled import WithoutProfiler
from stepscope.analysis.whatif.zero_grad import SetToNone
from stepscope.model.trace import Trace

#: Default DataLoader workers of the ``loader-workers`` remedy (the advisor's suggested count) where the trace
#: loads in the main process; where its loader already has workers, their time per batch divided by
#: ``RUNNING_FACTOR`` (twice the workers on free cores, or each sample half as costly: the trace does not
#: record how many workers there are, and this needs no count)
DEFAULT_WORKERS = 4
RUNNING_FACTOR = 2
#: cuDNN's fallback convolution kernels (the convolutions analysis' ``FALLBACK``) and the share of their
#: time ``cudnn.benchmark`` saves them (the advisor's ``cudnn_benchmark_gain`` default, a conservative
#: share: the real one depends on the layer shapes)
CUDNN_FALLBACK_PATTERN = FALLBACK.pattern
CUDNN_BENCHMARK_GAIN = 0.15
#: name → the transformation a remedy stands for
REMEDIES: dict[str, tf.Transform] = {
    "loader-workers": tf.LoaderWorkers(DEFAULT_WORKERS, times_if_running=RUNNING_FACTOR),
    "drop-syncs": tf.DropSyncs(),
    "pinned-copies": tf.PinnedCopies(),
    "graph-capture": tf.HostOverhead(0.0),
    "fused-optimizer": FusedOptimizer(),
    "keep-allocations": tf.KeepAllocations(),
    "no-compile": tf.NoCompile(),
    "batch-copies": tf.BatchSmallCopies(),
    "channels-last": ChannelsLast(),
    "amp": MixedPrecision(),
    "bf16": Bf16OverTf32(),
    "cudnn-benchmark": tf.ScaleDevice(tf.Select(CUDNN_FALLBACK_PATTERN), 1.0 - CUDNN_BENCHMARK_GAIN),
    "fill-sms": FillSms(),
    "pad-gemms": PadGemms(),
    "fuse-elementwise": FuseElementwise(),
    "fused-attention": FusedAttention(),
    "set-to-none": SetToNone(),
    "no-launch-blocking": NoLaunchBlocking(),
    "move-host-work": MoveHostWork(),
    "no-algo-search": NoAlgoSearch(),
    "move-loop-code": MoveLoopCode(),
}
#: name → the ``stepscope whatif`` options (and web UI fields) that replay the same change
#: (:func:`stepscope.analysis.whatif.options.transforms_of`; ``drop_syncs`` "." matches every call)
REMEDY_OPTIONS: dict[str, dict[str, int | float | str | bool | list[str]]] = {
    "loader-workers": {"remedy": ["loader-workers"]},  # `--workers 4` on a loader without workers, not on one with
    "drop-syncs": {"drop_syncs": "."},
    "pinned-copies": {"pin_copies": True},
    "graph-capture": {"host_overhead": 0.0},
    "fused-optimizer": {"fused_optimizer": True},
    "keep-allocations": {"host_in": [f"{tf.ALLOCATOR_CALLS}=0"], "drop_syncs": tf.ALLOCATOR_CALLS},
    "no-compile": {"no_compile": True},
    "batch-copies": {"batch_copies": True},
    "channels-last": {"scale": [f"{TRANSFORM_PATTERN}=0", f"{NCHW_VARIANT_PATTERN}={NCHW_VARIANT_FACTOR:g}"]},
    "amp": {"amp": True},
    "bf16": {"bf16": True},
    "cudnn-benchmark": {"scale": [f"{CUDNN_FALLBACK_PATTERN}={1.0 - CUDNN_BENCHMARK_GAIN:g}"]},
    "fill-sms": {"fill_sms": True},
    "pad-gemms": {"pad_gemms": True},
    "fuse-elementwise": {"fuse_elementwise": True},
    "fused-attention": {"fused_attention": True},
    "set-to-none": {"set_to_none": True},
    "no-launch-blocking": {"no_launch_blocking": True},
    "move-host-work": {"move_host_work": True},
    "no-algo-search": {"no_algo_search": True},
    "move-loop-code": {"move_loop_code": True},
}

def _channels_last_kernels(trace: Trace, rank: int) -> npt.NDArray[np.int64]:
    conv = compute_convolutions(trace, rank)
    return np.union1d(conv.transforms.rows, conv.tc_conv.rows)


def _misaligned_gemm_kernels(trace: Trace, rank: int) -> npt.NDArray[np.int64]:
    gd = compute_gemm_dims(trace, rank)
    return gd.kernels_of(gd.misaligned(GEMM_ALIGN))


#: the kernels each compute remedy would speed up (evidence rows of the analyses the rules read)
KERNEL_SETS: dict[str, Callable[[Trace, int], npt.NDArray[np.int64]]] = {
    "tensor-cores": lambda trace, rank: compute_tensor_cores(trace, rank).non_tc_kernels.rows,
    "fill-sms": lambda trace, rank: compute_launch_config(trace, rank).underfilled.rows,
    "pad-gemms": _misaligned_gemm_kernels,
    "cudnn-benchmark": lambda trace, rank: compute_convolutions(trace, rank).fallback.rows,
    "channels-last": _channels_last_kernels,
    "fuse-elementwise": lambda trace, rank: compute_elementwise_runs(trace, rank).kernels.rows,
    "tf32": lambda trace, rank: compute_tensor_cores(trace, rank).tf32_kernels.rows,
    "fused-attention": lambda trace, rank: math_attention(trace, rank).rows,
}


@dataclass(frozen=True)
class Remedies:
    """Per remedy (in :data:`REMEDIES` order): the predicted mean step of the rank and its basis."""

    rank: int
    name: tuple[str, ...]
    basis: tuple[str, ...]
    measured_mean_ns: float
    predicted_mean_ns: npt.NDArray[np.float64]
    kernel_set: tuple[str, ...]  # the kernel sets of :data:`KERNEL_SETS` found in the rank's steps
    kernel_set_share: npt.NDArray[np.float64]  # the share of their time on the critical path (0-1)
    #: per remedy, whether the trace holds anything it changes (no DataLoader call, no optimizer step:
    #: the loader-workers, fused-optimizer remedy cannot apply; its predicted step is the measured one)
    applies: tuple[bool, ...] = ()
    #: where :mod:`stepscope.analysis.profiler_cost` replayed the step: its mean without the profiler's
    #: own cost, and each remedy replayed on it (None elsewhere)
    unprofiled_mean_ns: float | None = None
    unprofiled_predicted_ns: npt.NDArray[np.float64] | None = None
    unprofiled_cost_ns: int = 0  # the profiler's cost per recorded op removed there
    #: per remedy, whether it can act on this rank at all: False for a change to a device's work alone
    #: (:func:`~.transforms.device_part`) on a rank without a device — shown nowhere there, not even as left out
    possible: tuple[bool, ...] = ()

    def shown(self, i: int) -> bool:
        """Whether the remedy at ``i`` is named on this rank at all (:attr:`possible`)."""
        return not self.possible or self.possible[i]

    def unprofiled_saved_ns(self, name: str) -> float | None:
        """What the remedy saves on the step without the profiler's own cost (None: not replayed there)."""
        if self.unprofiled_mean_ns is None or self.unprofiled_predicted_ns is None:
            return None
        return max(self.unprofiled_mean_ns - float(self.unprofiled_predicted_ns[self.name.index(name)]), 0.0)

    def on_path_share(self, name: str) -> float | None:
        """The share (0-1) of the set's kernel time on the step's critical path; None when the rank
        has no such kernels in its steps."""
        return float(self.kernel_set_share[self.kernel_set.index(name)]) if name in self.kernel_set else None

    @property
    def change_ns(self) -> npt.NDArray[np.float64]:
        """Per remedy, measured − predicted mean step: signed, a change may lengthen the step (the
        tables show it so, as ``stepscope whatif`` says "adds")."""
        return self.measured_mean_ns - self.predicted_mean_ns

    def saved_ns(self, name: str) -> float:
        """What the remedy saves on the rank's mean step (never negative: a finding's gain)."""
        return max(float(self.change_ns[self.name.index(name)]), 0.0)

    def basis_of(self, name: str) -> str:
        return self.basis[self.name.index(name)]


@per_rank
def compute_remedies(trace: Trace, rank: int) -> Remedies:
    """Replay the rank's steps once per remedy (see the module docstring)."""
    g = step_graph(trace, rank)
    measured = g.steps.measured_end_ns - g.steps.measured_start_ns
    if len(measured) == 0:
        raise NotApplicable("no steps and no device work to replay")
    require_linked(g)
    base = Durations.measured(g)
    durations = [t.change(trace, g, base) for t in REMEDIES.values()]
    # a remedy that changes nothing here (no DataLoader, no sync, no optimizer) saves nothing: only
    # the others are replayed (in lockstep)
    changed = [i for i, d in enumerate(durations) if not d.same_as(base)]
    predicted = [float(measured.mean())] * len(durations)
    for i, r in zip(changed, replay_all(g, [durations[i] for i in changed]) if changed else []):
        predicted[i] = float(r.step_ns.mean())
    names, share = _kernel_sets(trace, rank)
    unprofiled_mean, unprofiled, cost_ns = _unprofiled(trace, rank, g, base)
    device = has_device(trace, rank)
    return Remedies(rank, tuple(REMEDIES), tuple(_basis(trace, rank, n, t) for n, t in REMEDIES.items()),
                    float(measured.mean()), np.asarray(predicted, np.float64),
                    names, np.asarray(share, np.float64), tuple(i in changed for i in range(len(durations))),
                    unprofiled_mean, unprofiled, cost_ns, remedies_possible(device))


def remedies_possible(device: bool) -> tuple[bool, ...]:
    """Per remedy of :data:`REMEDIES`: whether it can act on a rank with (``device``) or without a device."""
    return tuple(device or tf.device_part(t) is None for t in REMEDIES.values())


def _unprofiled(trace: Trace, rank: int, g: StepGraph, base: Durations
                ) -> tuple[float | None, npt.NDArray[np.float64] | None, int]:
    """Where the profiler_cost analysis replayed the step without the profiler's own cost: that step's
    mean, each remedy replayed on it (the cost removed first — what a change saves the program, not
    the profiler) and the cost per op it removed."""
    try:
        p = compute_profiler_cost(trace, rank)
    except NotApplicable:
        return None, None, 0
    if p.unprofiled_step_ns is None:
        return None, None, 0
    without = WithoutProfiler(p.event_cost_ns).change(trace, g, base)
    durations = [t.change(trace, g, without) for t in REMEDIES.values()]
    changed = [i for i, d in enumerate(durations) if not d.same_as(without)]  # the others predict that step
    predicted = [p.unprofiled_step_ns] * len(durations)
    for i, r in zip(changed, replay_all(g, [durations[i] for i in changed]) if changed else []):
        predicted[i] = float(r.step_ns.mean())
    return p.unprofiled_step_ns, np.asarray(predicted, np.float64), p.event_cost_ns


def _basis(trace: Trace, rank: int, name: str, change: tf.Transform) -> str:
    """The remedy's basis in this rank's terms: the DataLoader model its loading takes (with the CPU
    caveat on a rank without a device), the device's speed-ups, the optimizer's pass; on a rank without a
    device, in a CPU-only program's terms (:func:`~.transforms.basis_for`)."""
    if isinstance(change, tf.LoaderWorkers):
        cpu = "" if has_device(trace, rank) else CPU_LOADER_CAVEAT
        return change.basis_on(trace, rank) + cpu
    if isinstance(change, MixedPrecision) and change.speedup is None:  # the rank's device says how much
        return MixedPrecision(amp_speedup_of(trace, rank)).basis()
    if isinstance(change, Bf16OverTf32) and change.speedup is None:
        return Bf16OverTf32(bf16_speedup_of(trace, rank)).basis()
    if isinstance(change, FusedOptimizer) and change.factor is None:
        return fused_basis_of(trace, rank)
    return tf.basis_for(change, has_device(trace, rank))


#: said of the loader-workers remedy on a rank without a device (a CPU-only job)
CPU_LOADER_CAVEAT = ("; CPU-only: workers take the cores its ops compute on, so this assumes cores to spare (on a "
                     "busy or small machine the step can even grow; cheaper samples need none)")


def _kernel_sets(trace: Trace, rank: int) -> tuple[tuple[str, ...], list[float]]:
    """Per kernel set present in the steps: the share of its time on the critical path."""
    cp = compute_critical_path(trace, rank)
    names: list[str] = []
    share: list[float] = []
    for name, rows_of in KERNEL_SETS.items():  # per remedy, not per event
        try:
            s = cp.on_path_share(trace, rows_of(trace, rank))
        except NotApplicable:
            continue
        if s is not None:
            names.append(name)
            share.append(s)
    return tuple(names), share
