"""Dynamo's frames per step: the cache lookups it runs, and whether a compiled region follows them.

Each call of a ``torch.compile``d function goes through Dynamo's frame hook, which the profiler
records as the CPU op ``TorchDynamo Cache Lookup`` (the guards of the frame's cached graphs checked).
A hit runs the cached code inside ``Torch-Compiled Region: <frame>/<recompile>``, whose compiled
graphs run inside ``CompiledFunction`` / ``## Call CompiledFxGraph <hash> ##``; a miss compiles (the
:mod:`.compilation` ranges) and then runs the new graph. A lookup that is followed by neither is a
frame Dynamo has given up on: its recompile limit reached (guards that fail on every call: a list the
frame appends to, a Python scalar that changes), an error suppressed, a construct it skips — the
function then runs **eager** under the ``torch.compile`` wrapper, silently (one warning, at the
limit).

Per step window: the lookups, the ``Torch-Compiled Region`` ranges, the compiled ranges of any kind
(region, ``CompiledFunction``, FX-graph call: older PyTorch has no region range) and whether the
step compiles. A *steady* step (no compilation in it) runs ``lookups − regions`` frames eager; where
the trace holds no region range at all, every lookup of a step without any compiled range does.
Lookups with their regions (a graph break: two frames, two regions) are compiled frames, not eager.

The ops that run eager are the host ops of those steps outside every compiled range, by self time
(the frame's own ops and the rest of the step: its end is not recorded). What they would take compiled
cannot be read from a trace where they ran eager; where the same trace also has steady steps whose
frames all compiled, the two step means are measured side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.common import I64, Windows, window_of
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

LOOKUP = "TorchDynamo Cache Lookup"
REGION_PREFIX = "Torch-Compiled Region"
B = npt.NDArray[np.bool_]


def is_lookup(name: str) -> bool:
    return name == LOOKUP


def is_region(name: str) -> bool:
    return name.startswith(REGION_PREFIX)


@dataclass(frozen=True)
class DynamoFrames:
    """Per step window of one rank: Dynamo's cache lookups and what ran after them."""

    step: I64  # the step numbers (-1: the whole-trace window)
    step_ns: I64
    lookups: I64  # ``TorchDynamo Cache Lookup`` calls
    regions: I64  # ``Torch-Compiled Region`` ranges
    compiled_ranges: I64  # compiled ranges of any kind (region, ``CompiledFunction``, FX-graph call)
    compiling: B  # the step compiles (time inside the compilation ranges)
    eager_frames: I64  # frames that ran eager (steady steps only; 0 in a compiling step)
    eager_ops: NamedRows  # host ops outside every compiled range in the steps with eager frames, self time

    @property
    def has_lookups(self) -> bool:
        return bool(self.lookups.sum() > 0)

    @property
    def steady(self) -> B:
        return ~self.compiling

    @property
    def falling_back(self) -> B:
        """The steady steps where at least one frame ran eager."""
        return self.steady & (self.eager_frames > 0)

    @property
    def compiled_steady(self) -> B:
        """The steady steps whose every looked-up frame ran compiled."""
        out: B = self.steady & (self.lookups > 0) & (self.eager_frames == 0)
        return out

    def mean_step_ns(self, mask: B) -> float:
        """The mean length of the steps of ``mask`` (0 where none)."""
        return float(self.step_ns[mask].mean()) if mask.any() else 0.0

    @property
    def lookups_per_step(self) -> float:
        return float(self.lookups.mean()) if len(self.lookups) else 0.0

    @property
    def regions_per_step(self) -> float:
        return float(self.regions.mean()) if len(self.regions) else 0.0

    @property
    def eager_frames_per_step(self) -> float:
        """Frames run eager per step that has any (0 where none)."""
        back = self.falling_back
        return float(self.eager_frames[back].mean()) if back.any() else 0.0

    @property
    def eager_ns_per_step(self) -> float:
        n = int(self.falling_back.sum())
        return self.eager_ops.total_ns / n if n else 0.0


def compute_dynamo_frames(trace: Trace, host: I64, ranges: I64, wins: Windows, compile_ns: I64) -> DynamoFrames:
    """``host``: the rank's host rows; ``ranges``: its compiled ranges (rows, in row order); ``compile_ns``:
    per window, its time compiling (:class:`~.compilation.Compilation`)."""
    ev, pool = trace.events, trace.strings
    n = len(wins)
    lookup_rows = host[pool.mask(is_lookup)[ev["name"][host]]]
    region_rows = ranges[pool.mask(is_region)[ev["name"][ranges]]]
    lookups, regions, compiled = (_count(wins, ev["ts_ns"][r], n) for r in (lookup_rows, region_rows, ranges))
    compiling = np.asarray(compile_ns > 0, bool)
    # a PyTorch without region ranges: a step's lookups ran eager only where nothing compiled ran
    eager = np.maximum(lookups - regions, 0) if len(region_rows) else np.where(compiled == 0, lookups, 0)
    eager = np.where(compiling, 0, eager).astype(np.int64)
    ops = _eager_ops(trace, host, ranges, lookup_rows, wins, eager > 0)
    return DynamoFrames(wins.step.astype(np.int64), wins.dur_ns.astype(np.int64), lookups, regions, compiled,
                        compiling, eager, ops)


def _count(wins: Windows, ts_ns: I64, n: int) -> I64:
    w = window_of(wins, ts_ns)
    return np.bincount(w[w >= 0], minlength=n).astype(np.int64)


def _eager_ops(trace: Trace, host: I64, ranges: I64, lookups: I64, wins: Windows, eager_win: B) -> NamedRows:
    """The CPU ops of the windows ``eager_win`` on the threads that looked up, outside every compiled
    range (the lookups themselves left out), with their self time."""
    ev = trace.events
    ops = host[ev["kind"][host] == EventKind.CPU_OP]
    w = window_of(wins, ev["ts_ns"][ops])
    threads = np.unique(ev["track"][lookups])
    ops = ops[(w >= 0) & eager_win[np.maximum(w, 0)] & np.isin(ev["track"][ops], threads)]
    ops = ops[~np.isin(ops, lookups)]
    marked = np.zeros(len(ev), bool)
    marked[ranges] = True
    ops = ops[nearest_marked_ancestor(ev["parent"], ops, marked, include_self=True) < 0]
    return named_rows(trace, ops, ev["self_ns"][ops])
