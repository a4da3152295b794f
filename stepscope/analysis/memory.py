"""Memory view (SPEC §4, TB "Memory"): allocator curves per device, peaks, allocation events with their
lifetimes, per-operator increase and counts, fragmentation (reserved − allocated).

Input is the ``[memory]`` instant events (``profile_memory=True``): each carries +bytes (alloc) or
−bytes (free), the address, the device, and the allocator's totals after the event. An allocation is
paired with the next free of the same address on the same device; one without a free lives to the
end of the trace (``free_ts_ns`` = -1), and so does every allocation of old traces that record no
address (``addresses_recorded`` False). The op of an event is the innermost host event around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import group_keys
from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.frames import TableResult
from stepscope.analysis.hier import sum_to_ancestors
from stepscope.analysis.platform import hint_for
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique, unique_rows, unique_texts

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]
NO_MEMORY = "no memory events: profile with profile_memory=True"
#: the same for a program without PyTorch: the allocator events are PyTorch's profiler's
NO_MEMORY_NATIVE = "no memory events (they are PyTorch's allocator's; a program without PyTorch has none)"


@dataclass(frozen=True)
class MemoryCurve(TableResult):
    """Allocator state over time on one device (bytes after each event)."""

    device: str
    ts_ns: I64
    allocated_bytes: I64
    reserved_bytes: I64  # -1 where the trace does not record it

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return {"ts_ns": self.ts_ns, "allocated_bytes": self.allocated_bytes, "reserved_bytes": self.reserved_bytes}

    @property
    def peak_allocated_bytes(self) -> int:
        return int(self.allocated_bytes.max()) if len(self.ts_ns) else 0

    @property
    def peak_reserved_bytes(self) -> int:
        return int(self.reserved_bytes.max()) if len(self.ts_ns) else 0

    @property
    def fragmentation_bytes(self) -> I64:
        """Reserved − allocated after each event (0 where reserved is unknown)."""
        return np.where(self.reserved_bytes >= 0, self.reserved_bytes - self.allocated_bytes, 0)


@dataclass(frozen=True)
class Allocations(TableResult):
    """One row per allocation: size, when, freed when, lifetime (-1 = not freed in the trace)."""

    device: S
    op_name: S
    size_bytes: I64
    alloc_ts_ns: I64
    free_ts_ns: I64
    lifetime_ns: I64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class OpMemory(TableResult):
    """Per operator name and device: memory increase (self and with children) and counts."""

    name: S
    device: S
    self_increase_bytes: I64
    total_increase_bytes: I64
    alloc_count: I64
    alloc_bytes: I64
    free_count: I64

    def columns(self) -> dict[str, npt.NDArray[np.generic]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class MemoryView:
    """Everything the memory view shows for one rank."""

    rank: int
    curves: tuple[MemoryCurve, ...]
    allocations: Allocations
    by_op: OpMemory
    addresses_recorded: bool  # False: old trace without "Addr", so frees cannot be paired

    @property
    def allocation_count(self) -> int:
        """Allocation events (+bytes)."""
        return len(self.allocations.size_bytes)

    @property
    def free_count(self) -> int:
        """Free events (−bytes) in the trace: the sum of the per-operator ``free_count``."""
        return int(self.by_op.free_count.sum())

    @property
    def freed_count(self) -> int | None:
        """Allocations of the trace freed within it; None when no addresses pair frees with allocations."""
        return int((self.allocations.free_ts_ns >= 0).sum()) if self.addresses_recorded else None


def device_label(device_type: int, device: int) -> str:
    """How every view names a memory device: "CPU" (device type 0, whatever its id: Kineto writes
    -1), "GPU<n>" (type 1), "device<type>:<n>" for any other type a profiler records."""
    if device_type == 0:
        return "CPU"
    if device_type == 1:
        return f"GPU{device}"
    return f"device{device_type}:{device}"


def _device_labels(dtype: I64, dev: I64) -> S:
    """:func:`device_label` per row, worded once per distinct (device type, device)."""
    _, first, inv = unique_rows(np.stack([dtype, dev], axis=1))
    words = np.empty(len(first), object)
    words[:] = [device_label(int(dtype[i]), int(dev[i])) for i in first.tolist()]  # per device
    out: S = words[np.asarray(inv).reshape(-1)]
    return out


def _curves(ts: I64, key: I64, labels: S, nbytes: I64, alloc: I64, reserved: I64) -> tuple[MemoryCurve, ...]:
    out = []
    for k in unique(key).tolist():  # per device
        m = np.flatnonzero(key == k)
        a = alloc[m]
        if (a < 0).all():  # totals not recorded: integrate the deltas
            a = np.cumsum(nbytes[m])
        out.append(MemoryCurve(str(labels[m[0]]), ts[m], a, reserved[m]))
    return tuple(out)


def _pair_allocations(ts: I64, key: I64, addr: I64, nbytes: I64) -> tuple[I64, I64]:
    """Allocation rows and the time of the free that ends each one (-1 when never freed)."""
    order = np.lexsort((ts, addr, key))
    same_next = np.zeros(len(order), bool)
    same_next[:-1] = (key[order][1:] == key[order][:-1]) & (addr[order][1:] == addr[order][:-1])
    same_next &= addr[order] != 0  # old traces record no address: nothing can be paired
    is_alloc = nbytes[order] > 0
    next_free = np.zeros(len(order), bool)
    next_free[:-1] = nbytes[order][1:] < 0
    freed = is_alloc & same_next & next_free
    free_ts = np.full(len(order), -1, np.int64)
    free_ts[:-1] = np.where(freed[:-1], ts[order][1:], -1)
    rows = order[is_alloc]
    return rows, free_ts[is_alloc]


def _by_op(trace: Trace, op: I64, labels: S, nbytes: I64) -> OpMemory:
    ev = trace.events
    n = len(ev)
    has = op >= 0
    lab_ids, lab_inv = unique_texts(labels)
    (u_name, u_lab), inv = group_keys(_op_names(trace, np.where(has, op, -1)), lab_inv)
    g = len(u_name)
    pos, neg = nbytes > 0, nbytes < 0
    # inclusive increase per op row, then summed over the rows of each (name, device) group
    total_rows = np.zeros(len(op))
    for li in range(len(lab_ids)):  # per device
        m = has & (lab_inv == li)
        incl = sum_to_ancestors(ev["parent"], op[m], nbytes[m], n)
        first = np.unique(op[m], return_index=True)[1]
        sel = np.flatnonzero(m)[first]
        total_rows[sel] = incl[op[sel]]
    name = trace.strings.decode(u_name.astype(np.int32))
    name[u_name < 0] = "(outside any op)"
    # largest allocation first; ties by name and device, so the order never depends on string ids
    o = np.lexsort((u_lab, unique_texts(name)[1], -np.bincount(inv, weights=nbytes.clip(min=0), minlength=g)))
    return OpMemory(name=name[o], device=lab_ids.astype(object)[u_lab][o],
                    self_increase_bytes=_byte_sums(inv, nbytes, g)[o],
                    total_increase_bytes=_byte_sums(inv, total_rows, g)[o],
                    alloc_count=np.bincount(inv[pos], minlength=g).astype(np.int64)[o],
                    alloc_bytes=_byte_sums(inv[pos], nbytes[pos], g)[o],
                    free_count=np.bincount(inv[neg], minlength=g).astype(np.int64)[o])


#: the largest byte sum kept (a float64 sum of int64 sizes can pass int64's range: absurd sizes)
_SUM_LIMIT = float(np.nextafter(2.0**63, 0))


def _byte_sums(group: I64, nbytes: npt.NDArray[np.number], groups: int) -> I64:
    """Per group the bytes summed, held within int64 (sizes near 2^63 in a damaged trace)."""
    sums = np.clip(np.bincount(group, weights=nbytes, minlength=groups), -_SUM_LIMIT, _SUM_LIMIT)
    out: I64 = sums.astype(np.int64)
    return out


def _op_names(trace: Trace, op: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    """The name id of each sample's op, -1 where it has none (also when the trace has no events)."""
    names = trace.events["name"]
    if len(names) == 0:
        return np.full(len(op), -1, np.int32)
    return np.where(op >= 0, names[np.maximum(op, 0)], -1).astype(np.int32)


@per_rank
def compute_memory(trace: Trace, rank: int) -> MemoryView:
    """The memory view of one rank; NotApplicable without ``[memory]`` events."""
    mem = trace.memory
    rows = np.flatnonzero(mem["rank"] == rank)
    if len(rows) == 0:
        raise NotApplicable(hint_for(trace, NO_MEMORY, NO_MEMORY_NATIVE))
    rows = rows[np.argsort(mem["ts_ns"][rows], kind="stable")]
    ts, nbytes = mem["ts_ns"][rows], mem["bytes"][rows]
    dtype, dev = mem["device_type"][rows].astype(np.int64), mem["device"][rows].astype(np.int64)
    key = dtype * (1 << 20) + dev
    labels = _device_labels(dtype, dev)
    op = mem["op"][rows].astype(np.int64)
    curves = _curves(ts, key, labels, nbytes, mem["total_allocated"][rows], mem["total_reserved"][rows])
    arow, free_ts = _pair_allocations(ts, key, mem["addr"][rows], nbytes)
    op_name = trace.strings.decode(_op_names(trace, op[arow]))
    allocs = Allocations(device=labels[arow], op_name=op_name, size_bytes=nbytes[arow], alloc_ts_ns=ts[arow],
                         free_ts_ns=free_ts, lifetime_ns=np.where(free_ts >= 0, free_ts - ts[arow], -1))
    return MemoryView(rank=rank, curves=curves, allocations=allocs, by_op=_by_op(trace, op, labels, nbytes),
                      addresses_recorded=bool((mem["addr"][rows] != 0).any()))
