"""Input shapes from step to step (needs ``record_shapes``; SPEC §6 row variable-input-shapes).

Among the CPU ops of a rank inside its steps that run in every step, the calls whose (op, input
shapes) pair is *not* seen in every step: the shapes change from step to step (NLP batches padded
to their longest sequence, variable image sizes, a last partial batch). Varying shapes defeat
``cudnn.benchmark`` caches, CUDA Graphs and ``torch.compile`` (recompiles), and pad work. Needs two
or more steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, in_step_rows, kept_steps
from stepscope.analysis.gemm_dims import compact_json
from stepscope.analysis.platform import NO_PYTORCH_OPS, hint_for
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique


@dataclass(frozen=True)
class VaryingOps:
    """Per op name, its calls whose shapes vary, and how many distinct shapes they have; most first."""

    name: list[str]
    calls: I64
    shapes: I64


@dataclass(frozen=True)
class InputShapesResult:
    """How many calls of the every-step ops see shapes that are not seen in every step."""

    rank: int
    step_count: int
    calls: int  # calls of ops that run in every step
    varying_calls: int  # ... whose (op, shapes) is not seen in every step
    varying_pct: float  # varying_calls as % of calls
    example_op: str | None  # the op of the first varying call
    example_shapes: tuple[str, ...]  # up to four of its varying shapes, compacted
    varying_ops: VaryingOps


def compute_input_shapes(trace: Trace, rank: int) -> InputShapesResult:
    """The share of every-step op calls whose input shapes vary from step to step."""
    nsteps = len(kept_steps(trace, rank))
    if nsteps < 2:
        raise NotApplicable("needs two or more profiled steps")
    ev = trace.events
    rows = in_step_rows(trace, rank, (int(EventKind.CPU_OP),))
    rows = rows[ev["input_dims"][rows] >= 0]
    if len(rows) == 0:
        raise NotApplicable("input shapes were not recorded " + hint_for(trace, "(record_shapes=True)",
                                                                         f"({NO_PYTORCH_OPS})"))
    name, step = ev["name"][rows].astype(np.int64), ev["step"][rows].astype(np.int64)
    dims = ev["input_dims"][rows].astype(np.int64)
    in_steps = _distinct_steps(name * (1 << 31) + dims, step)
    everywhere = _distinct_steps(name, step) == nsteps
    varying = everywhere & (in_steps < nsteps)
    calls = everywhere.sum()
    share = 100.0 * float(varying.sum()) / calls if calls else 0.0
    example_op: str | None = None
    shapes: tuple[str, ...] = ()
    if varying.any():
        ex_name = int(name[np.flatnonzero(varying)[0]])
        example_op = trace.strings[ex_name]
        shapes = tuple(compact_json(trace.strings[int(s)]) for s in unique(dims[(name == ex_name) & varying])[:4])
    return InputShapesResult(rank, nsteps, int(calls), int(varying.sum()), share, example_op, shapes,
                             _by_op(trace, name[varying], dims[varying]))


def _distinct_steps(key: npt.NDArray[np.int64], step: npt.NDArray[np.int64]) -> I64:
    """Per row, in how many distinct steps its key occurs (distinct (key, step) pairs via one lexsort)."""
    order = np.lexsort((step, key))
    k, s = key[order], step[order]
    first = np.ones(len(k), bool)
    first[1:] = (k[1:] != k[:-1]) | (s[1:] != s[:-1])
    keys, counts = np.unique(k[first], return_counts=True)
    out: I64 = counts[np.searchsorted(keys, key)]
    return out


def _by_op(trace: Trace, name: I64, dims: I64) -> VaryingOps:
    ids, calls = np.unique(name, return_counts=True)
    pairs = unique(name * (1 << 31) + dims)
    shapes = np.bincount(np.searchsorted(ids, pairs >> 31), minlength=len(ids))
    order = np.argsort(-calls, kind="stable")
    return VaryingOps(name=[str(s) for s in trace.strings.decode(ids[order])], calls=calls[order].astype(np.int64),
                      shapes=shapes[order].astype(np.int64))
