"""Annotation view (SPEC §4): time per ``record_function`` / user annotation on the host, the GPU
time launched inside each, and time per GPU-side annotation range (``gpu_user_annotation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import duration_stats, largest_first
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.frames import TableResult
from stepscope.analysis.hier import sum_to_ancestors
from stepscope.analysis.platform import has_device, hint_for
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]
NO_ANNOTATIONS = "no user annotations: wrap code in torch.profiler.record_function(...) to see them"
#: the same for a program without PyTorch (Nsight Systems reads NVTX ranges as annotations)
NO_ANNOTATIONS_NATIVE = "no user annotations: mark code ranges with NVTX (nvtxRangePushA / nvtxRangePop) to see them"


@dataclass(frozen=True)
class AnnotationTable(TableResult):
    """Annotations by name, largest total first (ns). ``device_ns`` = GPU time launched inside (host
    annotations) or -1 (GPU annotations)."""

    name: S
    calls: I64
    total_ns: I64
    mean_ns: F64
    min_ns: I64
    max_ns: I64
    device_ns: I64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class AnnotationView:
    """Host (CPU) and GPU annotations of one rank."""

    rank: int
    host: AnnotationTable
    gpu: AnnotationTable
    has_device: bool = True  # False: a CPU-only run (no GPU time inside the host annotations to speak of)


def _table(trace: Trace, rows: I64, device_per_row: F64 | None) -> AnnotationTable:
    ev = trace.events
    ids, inv = np.unique(ev["name"][rows], return_inverse=True)
    inv = inv.astype(np.int64)
    st = duration_stats(inv, ev["dur_ns"][rows], len(ids))
    dev = (np.rint(np.bincount(inv, weights=device_per_row, minlength=len(ids))).astype(np.int64)
           if device_per_row is not None else np.full(len(ids), -1, np.int64))
    o = largest_first(st.total_ns)
    return AnnotationTable(name=trace.strings.decode(ids)[o], calls=st.calls[o], total_ns=st.total_ns[o],
                           mean_ns=st.mean_ns[o], min_ns=st.min_ns[o], max_ns=st.max_ns[o], device_ns=dev[o])


@per_rank
def compute_annotations(trace: Trace, rank: int) -> AnnotationView:
    """The annotation view of one rank; NotApplicable when there is no annotation at all."""
    ev = trace.events
    mine = ev["rank"] == rank
    host = np.flatnonzero(mine & (ev["kind"] == EventKind.USER_ANNOTATION)).astype(np.int64)
    gpu_ann = np.flatnonzero(mine & (ev["kind"] == EventKind.GPU_USER_ANNOTATION)).astype(np.int64)
    if len(host) == 0 and len(gpu_ann) == 0:
        raise NotApplicable(hint_for(trace, NO_ANNOTATIONS, NO_ANNOTATIONS_NATIVE))
    work = np.flatnonzero(mine & any_of(ev["kind"], [int(k) for k in GPU_KINDS]) & (ev["launch"] >= 0))
    inside = sum_to_ancestors(ev["parent"], ev["launch"][work].astype(np.int64), ev["dur_ns"][work], len(ev))
    return AnnotationView(rank=rank, host=_table(trace, host, inside[host]), gpu=_table(trace, gpu_ann, None),
                          has_device=has_device(trace, rank))
