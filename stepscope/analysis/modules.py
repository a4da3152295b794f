"""Module view (SPEC §4): the nn.Module hierarchy with host/device self and total time and calls.

Modules are the host events named ``nn.Module: <Class>_<n>`` (``with_stack`` / ``with_modules``
python_function frames, or record_function annotations of that name). A module's parent is its
nearest enclosing module on the same thread. Host total = its duration; host self = minus its child
modules. Device total = GPU time (kernels, copies, sets) launched anywhere inside it; device self =
launched inside it but outside every child module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import largest_first
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.frames import TableResult
from stepscope.analysis.hier import sum_to_ancestors
from stepscope.analysis.platform import hint_for
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, HOST_KINDS
from stepscope.model.trace import Trace
from stepscope.model.tree import depths, nearest_marked_ancestor

I64 = npt.NDArray[np.int64]
S = npt.NDArray[np.object_]
PREFIX = "nn.Module: "
NO_MODULES = ("no nn.Module events: profile with with_stack=True to see modules (with_modules=True records them "
              "for TorchScript models only)")
NO_MODULES_NATIVE = "no nn.Module events: a program without PyTorch has no modules"


@dataclass(frozen=True)
class ModuleTable(TableResult):
    """Modules by name (instance names carry an index, e.g. ``Linear_0``), largest device total first."""

    name: S
    parent: S  # name of the enclosing module ("" at the top)
    depth: I64  # module nesting depth (0 = top-level module)
    calls: I64
    host_total_ns: I64
    host_self_ns: I64
    device_total_ns: I64
    device_self_ns: I64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@per_rank
def compute_modules(trace: Trace, rank: int) -> ModuleTable:
    """The module view of one rank; NotApplicable without module events."""
    ev = trace.events
    n = len(ev)
    host = any_of(ev["kind"], [int(k) for k in HOST_KINDS]) & (ev["rank"] == rank)
    is_mod = host & trace.strings.mask(lambda s: s.startswith(PREFIX))[ev["name"]]
    rows = np.flatnonzero(is_mod).astype(np.int64)
    if len(rows) == 0:
        raise NotApplicable(hint_for(trace, NO_MODULES, NO_MODULES_NATIVE))
    mod_parent = np.full(n, -1, np.int64)
    mod_parent[rows] = nearest_marked_ancestor(ev["parent"], rows, is_mod)
    child = rows[mod_parent[rows] >= 0]
    host_self = ev["dur_ns"].astype(np.float64) - np.bincount(mod_parent[child], weights=ev["dur_ns"][child],
                                                              minlength=n)
    gpu = np.flatnonzero((ev["rank"] == rank) & any_of(ev["kind"], [int(k) for k in GPU_KINDS])
                         & (ev["launch"] >= 0))
    owner = nearest_marked_ancestor(ev["parent"], ev["launch"][gpu].astype(np.int64), is_mod, include_self=True)
    dur = ev["dur_ns"][gpu]
    dev_self = np.bincount(owner[owner >= 0], weights=dur[owner >= 0], minlength=n)
    dev_total = sum_to_ancestors(mod_parent.astype(np.int32), owner, dur, n)
    names, first, inv = np.unique(ev["name"][rows], return_index=True, return_inverse=True)
    g = len(names)

    def agg(w: npt.ArrayLike) -> I64:
        return np.rint(np.bincount(inv, weights=w, minlength=g)).astype(np.int64)

    dev_tot = agg(dev_total[rows])
    o = largest_first(dev_tot + agg(ev["dur_ns"][rows]) * 1e-9)
    par = mod_parent[rows[first]]
    pool = trace.strings
    parent_names = pool.decode(np.where(par >= 0, ev["name"][np.maximum(par, 0)], -1))
    strip = np.vectorize(lambda s: s[len(PREFIX):] if s.startswith(PREFIX) else s, otypes=[object])
    return ModuleTable(name=strip(pool.decode(names))[o], parent=strip(parent_names)[o] if g else parent_names,
                       depth=depths(mod_parent, rows[first])[o],
                       calls=np.bincount(inv, minlength=g).astype(np.int64)[o],
                       host_total_ns=agg(ev["dur_ns"][rows])[o], host_self_ns=agg(host_self[rows])[o],
                       device_total_ns=dev_tot[o], device_self_ns=agg(dev_self[rows])[o])
