"""``torch.compile`` compiling inside the profiled steps: the host time Dynamo and Inductor spend
tracing, lowering, generating code and autotuning while the step waits.

PyTorch marks every compilation phase with a profiler range: ``dynamo_timed`` names its ranges
``<phase> (dynamo_timed)`` (``_compile.compile_inner``, ``OutputGraph.call_user_compiler``,
``compile_fx_inner``, ``PyCodeCache.load_by_key_path`` …), and the outermost ones are
``entire_frame_compile`` (a frame: forward graph), ``entire_backward_compile`` (its lazily compiled
backward), ``inductor_compile``, ``backend_compile``. Their union over the rank's host threads is
the compilation: a host event (a launch, a ``cudaDeviceSynchronize`` of autotuning) that starts
inside it is the compiler's, not the step's. The compiled frame's ``Torch-Compiled Region: F/R``
range says which recompile ran (``R`` > 0: Dynamo's guards failed on an earlier graph, most often a
new input shape).

A compilation in one step only (the first profiled step, a too-short warm-up) is profiling's cost;
in every step it is recompilation, which the user's change removes (``dynamic=True`` /
``torch._dynamo.mark_dynamic`` for a varying size, or fixed, padded sizes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis import intervals
from stepscope.analysis._memo import per_rank, per_trace
from stepscope.analysis.common import I64, interval_set, rank_rows, step_windows
from stepscope.model.masks import any_of
from stepscope.model.schema import HOST_KINDS
from stepscope.model.trace import Trace

#: the outermost compilation ranges, by name (``dynamo_timed`` ranges are matched by their suffix)
COMPILE_RANGES = ("entire_frame_compile", "entire_backward_compile", "inductor_compile", "backend_compile")
#: one regular expression for every compilation range (what-if ``--host-in`` / ``--drop-syncs`` take it)
COMPILE_PATTERN = r"\(dynamo_timed\)$|^CachingAutotuner\.|^(?:" + "|".join(COMPILE_RANGES) + ")$"
_COMPILE = re.compile(COMPILE_PATTERN)
_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")


def is_compile_range(name: str) -> bool:
    """A range PyTorch opens around a compilation phase (see the module docstring)."""
    return _COMPILE.search(name[:200]) is not None


@per_trace
def compile_rows(trace: Trace) -> I64:
    """Every host row of the trace that is a compilation range."""
    ev = trace.events
    host = np.flatnonzero(any_of(ev["kind"], [int(k) for k in HOST_KINDS]))
    return host[trace.strings.mask(is_compile_range)[ev["name"][host]]].astype(np.int64)


@per_rank
def rank_compile_rows(trace: Trace, rank: int) -> I64:
    """The rank's compilation ranges (host rows): a rank's rows are contiguous, so no set operation
    with its millions of host rows (the idle analysis and the what-if ask on every trace)."""
    rows, sl = compile_rows(trace), trace.rank_slice(rank)
    mine: I64 = rows[(rows >= sl.start) & (rows < sl.stop)]
    return mine


def inside_compilation(trace: Trace, rows: I64) -> npt.NDArray[np.bool_]:
    """Per row: whether it starts while a compilation runs (the compiler's call, not the step's)."""
    return intervals.contains(_compile_spans(trace), trace.events["ts_ns"][rows])


@per_trace
def _compile_spans(trace: Trace) -> intervals.Intervals:
    return interval_set(trace, compile_rows(trace))


@dataclass(frozen=True)
class Compilation:
    """The rank's compilation inside its steps."""

    step_ns: I64  # per step window: its length
    compile_ns: I64  # per step window: the time inside compilation ranges
    max_recompile: int  # the highest recompile number of a ``Torch-Compiled Region`` in the steps; -1: none

    @property
    def total_ns(self) -> int:
        return int(self.compile_ns.sum())

    @property
    def steps_with_compile(self) -> int:
        return int((self.compile_ns > 0).sum())

    @property
    def recompiling(self) -> bool:
        """Compiling in more than one step, or a recompiled graph running in them."""
        return self.steps_with_compile > 1 or self.max_recompile > 0


def compute_compilation(trace: Trace, rank: int) -> Compilation:
    """The compilation ranges' union, per step window (the module docstring)."""
    wins = step_windows(trace, rank)
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    spans = interval_set(trace, rank_compile_rows(trace, rank))
    covered = intervals.covered_in_windows(spans, wins.start_ns, wins.end_ns).astype(np.int64)
    first, last = (int(wins.start_ns.min()), int(wins.end_ns.max())) if len(wins) else (0, -1)
    return Compilation(wins.dur_ns.astype(np.int64), covered, _max_recompile(trace, host, first, last))


def _is_region(name: str) -> bool:
    return name.startswith("Torch-Compiled Region: ")


def _max_recompile(trace: Trace, host: I64, first: int, last: int) -> int:
    ev = trace.events
    rows = host[trace.strings.mask(_is_region)[ev["name"][host]]]
    ts = ev["ts_ns"][rows]
    ids = np.unique(ev["name"][rows[(ts >= first) & (ts < last)]])
    found = [int(m.group(2)) for s in trace.strings.decode(ids) if (m := _REGION.match(str(s)))]
    return max(found, default=-1)
