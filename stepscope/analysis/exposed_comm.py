"""Exposed vs overlapped communication, per rank and step: the job's table of the distributed
analysis's numbers (:mod:`stepscope.analysis.distributed`; no definition of its own).

Per rank and step window: ``exposed_ns`` = |comm \\ compute| (the distributed analysis's
``communication_ns``: communication the rank's compute does not hide), ``overlapped_ns`` =
|comm ∩ compute| (its ``overlap_ns``), ``comm_ns`` = their sum (the union of the communication
kernels inside the step), ``exposed_pct`` = exposed / step and ``overlapped_pct`` = overlapped /
comm (the per-step form of ``overlap_ratio_pct``). A rank without communication kernels has no rows.

:func:`exposed_record` is the per-rank step (the rank's few per-step numbers), :func:`combine_exposed`
the table, rank by rank in step order, plus each rank's totals over its steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import F64, I32, I64
from stepscope.analysis.distributed import compute_distributed
from stepscope.analysis.frames import TableResult
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class ExposedRecord:
    """One rank's per-step numbers (arrays aligned with ``step``)."""

    rank: int
    step: I32
    step_ns: I64
    exposed_ns: I64
    overlapped_ns: I64


@dataclass(frozen=True)
class ExposedRows(TableResult):
    """One row per (rank, step) — or per rank, for the totals."""

    rank: I64
    step: I64  # ProfilerStep number (-1: the rank's one window; the totals: -1)
    step_ns: I64
    comm_ns: I64
    exposed_ns: I64
    overlapped_ns: I64
    exposed_pct: F64  # of the step
    overlapped_pct: F64  # of the communication (NaN without any)

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ExposedComm:
    steps: ExposedRows  # per rank and step
    ranks: ExposedRows  # per rank, summed over its steps


def exposed_record(trace: Trace, rank: int) -> ExposedRecord | None:
    """The rank's per-step exposed / overlapped communication, None when it has no communication kernel."""
    try:
        d = compute_distributed(trace, rank)
    except NotApplicable:
        return None
    return ExposedRecord(rank, d.step.astype(np.int32), d.step_ns.astype(np.int64),
                         d.communication_ns.astype(np.int64), d.overlap_ns.astype(np.int64))


def combine_exposed(records: Mapping[int, ExposedRecord | None]) -> ExposedComm:
    """The job's table from every rank's record (NotApplicable when no rank communicates)."""
    recs = [r for _, r in sorted(records.items()) if r is not None and len(r.step)]
    if not recs:
        raise NotApplicable("no rank has communication kernels inside a step")
    rank = np.concatenate([np.full(len(r.step), r.rank, np.int64) for r in recs])
    step = np.concatenate([r.step for r in recs]).astype(np.int64)
    cols = [np.concatenate([getattr(r, f) for r in recs]) for f in ("step_ns", "exposed_ns", "overlapped_ns")]
    steps = _rows(rank, step, *cols)
    ids = np.array([r.rank for r in recs], np.int64)
    totals = [np.array([int(getattr(r, f).sum()) for r in recs], np.int64)  # per rank
              for f in ("step_ns", "exposed_ns", "overlapped_ns")]
    return ExposedComm(steps, _rows(ids, np.full(len(ids), -1, np.int64), *totals))


def _rows(rank: I64, step: I64, step_ns: I64, exposed: I64, overlapped: I64) -> ExposedRows:
    comm = exposed + overlapped
    return ExposedRows(rank, step, step_ns, comm, exposed, overlapped,
                       np.where(step_ns > 0, 100.0 * exposed / np.maximum(step_ns, 1), np.nan),
                       np.where(comm > 0, 100.0 * overlapped / np.maximum(comm, 1), np.nan))
