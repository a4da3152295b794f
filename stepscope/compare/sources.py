"""One run's side of each compared table, read from the analysis results it already has.

Operators, kernels, modules and memory come from the views (:mod:`stepscope.analysis.operators`,
``kernels``, ``modules``, ``memory``); nothing here recomputes them. The runtime-API table has no
view yet, so :func:`runtime_api` groups the rank's runtime / driver calls itself (one ``bincount``
over name ids). Every value is divided by ``steps`` (per average step) unless ``steps`` is 1.

``side_tables`` extracts them all; when neither run has GPU time, :func:`host_view` compares the
host column instead.

=========== ======== ==================================== =========================================
table       unit     value                                extra columns
=========== ======== ==================================== =========================================
operators   ms       device self time (host self time     host_self, host_total, device_total
                     when neither run has GPU time)
kernels     ms       total kernel time                    —
modules     ms       device total time (host total when   host_total, host_self, device_self
                     neither run has GPU time)
memory      MB       bytes allocated by the op            self_increase (allocated − freed)
runtime     ms       total host time of the call          —
categories  ms       device time of the op category       —
=========== ======== ==================================== =========================================
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from stepscope.analysis.bundle import RankResults
from stepscope.analysis.registry import KERNELS, MEMORY, MODULES, OP_CATEGORIES, OPERATORS, RankAnalysis
from stepscope.compare.align import texts
from stepscope.compare.tables import SideTable
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

F64 = npt.NDArray[np.float64]
T = TypeVar("T")
MS = 1e6
MB = float(1 << 20)
_STEP_RE = re.compile(r"^ProfilerStep#\d+$")


class Missing(Exception):
    """A side has no data for a table (the view was skipped); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _f(a: npt.ArrayLike, scale: float) -> F64:
    return np.asarray(a, np.float64) / scale


def _result(rr: RankResults, key: RankAnalysis[T]) -> T:
    result = rr.get(key)
    if result is None:
        raise Missing(rr.skipped.get(key.name, f"the {key.name} view did not run"))
    return result


def operators(rr: RankResults, steps: int, by_shapes: bool) -> SideTable:
    """Operators by name (or name + input shapes): device self time per step (host times as extras)."""
    view = _result(rr, OPERATORS)
    t = view.by_name_shape if by_shapes else view.by_name
    s = MS * steps
    return SideTable(names=np.asarray(t.name, dtype=object), value=_f(t.device_self_ns, s), count=_f(t.calls, 1),
                     shapes=np.asarray(t.input_shape, dtype=object) if by_shapes else None,
                     extra={"host_self": _f(t.host_self_ns, s), "host_total": _f(t.host_total_ns, s),
                            "device_total": _f(t.device_total_ns, s)})


def kernels(rr: RankResults, steps: int) -> SideTable:
    """Kernels by name: total time per step and launches."""
    t = _result(rr, KERNELS).by_name
    return SideTable(names=np.asarray(t.name, dtype=object), value=_f(t.total_ns, MS * steps),
                     count=_f(t.calls, 1))


def categories(rr: RankResults, steps: int) -> SideTable:
    """Op categories with device work: device time per step, device rows (kernels, copies, memsets)."""
    t = _result(rr, OP_CATEGORIES).table
    has = t.activities > 0
    return SideTable(names=np.asarray(t.category[has], dtype=object), value=_f(t.time_ns[has], MS * steps),
                     count=_f(t.activities[has], 1))


def modules(rr: RankResults, steps: int) -> SideTable:
    """nn.Modules by name: device total time per step (host times as extras)."""
    t = _result(rr, MODULES)
    s = MS * steps
    return SideTable(names=np.asarray(t.name, dtype=object), value=_f(t.device_total_ns, s), count=_f(t.calls, 1),
                     extra={"host_total": _f(t.host_total_ns, s), "host_self": _f(t.host_self_ns, s),
                            "device_self": _f(t.device_self_ns, s)})


#: without GPU time on either side, these tables compare this host column instead (old value kept as)
HOST_METRIC = {"operators": ("host_self", "device_self"), "modules": ("host_total", "device_total")}


def host_view(table: str, t: SideTable) -> SideTable:
    """The table with its host metric as the compared value (CPU-only runs)."""
    if table not in HOST_METRIC or len(t.extra) == 0:
        return t
    host, old = HOST_METRIC[table]
    extra = {k: v for k, v in t.extra.items() if k != host}
    extra[old] = t.value
    return SideTable(t.names, t.extra[host], t.count, t.shapes, extra)


def side_tables(rr: RankResults, trace: Trace, steps: int,
                by_shapes: bool) -> dict[str, SideTable | str]:
    """Every compared table of one rank; a str in place of a table says why it is missing."""
    getters: dict[str, Callable[[], SideTable]] = {
        "operators": lambda: operators(rr, steps, by_shapes),
        "kernels": lambda: kernels(rr, steps),
        "categories": lambda: categories(rr, steps),
        "modules": lambda: modules(rr, steps),
        "memory": lambda: memory(rr, steps),
        "runtime": lambda: runtime_api(trace, rr.rank, steps)}
    out: dict[str, SideTable | str] = {}
    for name, get in getters.items():  # six tables
        try:
            out[name] = get()
        except Missing as exc:
            out[name] = exc.reason
    return out


def memory(rr: RankResults, steps: int) -> SideTable:
    """Allocations per op name and device: MB allocated per step, allocation count."""
    t = _result(rr, MEMORY).by_op
    names = _steps_as_one(np.asarray(t.name, dtype=object))
    dev = np.asarray(t.device, dtype=object)
    label = texts([f"{n} @ {d}" for n, d in zip(names.tolist(), dev.tolist())])
    s = MB * steps
    return SideTable(names=np.asarray(label, dtype=object), value=_f(t.alloc_bytes, s),
                     count=_f(t.alloc_count, 1), extra={"self_increase": _f(t.self_increase_bytes, s)})


def _steps_as_one(names: npt.NDArray[np.object_]) -> npt.NDArray[np.object_]:
    """``ProfilerStep#12`` → ``ProfilerStep#*``: step numbers differ between runs, the role does not."""
    if len(names) == 0:
        return names
    uniq, inv = np.unique(texts(names), return_inverse=True)
    fixed = np.array([_STEP_RE.sub("ProfilerStep#*", u) for u in uniq.tolist()] + [""], dtype=object)[:-1]
    return np.asarray(fixed[inv.reshape(-1)], dtype=object)


def runtime_api(trace: Trace, rank: int, steps: int) -> SideTable:
    """Runtime / driver API calls by name (cudaLaunchKernel, hipMemcpyAsync ...): host time per step.

    Scope as the views: every call of the rank, inside steps or not.
    """
    ev = trace.events
    rows = np.flatnonzero((ev["rank"] == rank) & np.isin(ev["kind"], [int(EventKind.RUNTIME),
                                                                       int(EventKind.DRIVER)]))
    if len(rows) == 0:
        raise Missing("no runtime API calls in this trace")
    ids, inv = np.unique(ev["name"][rows], return_inverse=True)
    inv = inv.reshape(-1)
    total = np.bincount(inv, weights=ev["dur_ns"][rows], minlength=len(ids))
    calls = np.bincount(inv, minlength=len(ids))
    return SideTable(names=trace.strings.decode(ids.astype(np.int64)), value=_f(total, MS * steps),
                     count=_f(calls, 1))


def has_device_time(rr: RankResults) -> bool:
    """Whether the rank ran anything on a GPU (kernels view present with time)."""
    kv = rr.get(KERNELS)
    return kv is not None and int(kv.total_kernel_ns) > 0
