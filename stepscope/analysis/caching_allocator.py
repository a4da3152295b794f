"""The caching allocator of one rank's GPU: its calls into the driver and its totals over time
(SPEC §6 rows allocator-fragmentation and memory-near-capacity).

* **Allocator calls** inside the rank's steps — without steps, inside its one window (the step
  breakdown's: a program's set-up allocations before its first op or kernel are not counted, as no
  other analysis counts them): the runtime / driver calls that allocate or free device memory
  (``cudaMalloc`` / ``cudaFree`` / ``hipMalloc`` / ``hipFree`` and their ``Async`` forms,
  ``cuMemAlloc*`` / ``cuMemFree*``, ``cudaDeviceReset``). A warmed-up caching allocator makes none;
  ``cudaFree`` also synchronises the device (``torch.cuda.empty_cache()`` each step causes them).
* **Totals** from the ``[memory]`` events of the rank's GPUs (``profile_memory=True``) that record the
  reserved total: allocated and reserved bytes after each event, in time order, and their peaks —
  reserved − allocated at the reserved peak is memory the allocator holds but no tensor uses
  (fragmentation) —, against the device's memory size (``deviceProperties``).

Always computed: the rules say which part they lack (no memory events, no device size).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.common import I64, in_step_rows, kept_steps, step_windows, window_of
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.analysis.platform import NO_DEVICE, has_device, hint_for
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

ALLOC_CALL = re.compile(r"^(cuda|hip)(Malloc|Free)(Async)?$|^cuMem(Alloc|Free)|^cudaDeviceReset$")
GPU_DEVICE = 1  # memory table device_type of a GPU
NO_GPU_MEMORY = "no GPU memory events (profile_memory=True records them)"
#: the same for a program without PyTorch: the allocator events are PyTorch's profiler's
NO_GPU_MEMORY_NATIVE = "no GPU memory events (they are PyTorch's allocator's; a program without PyTorch has none)"


def is_alloc_call(name: str) -> bool:
    return ALLOC_CALL.match(name) is not None


@dataclass(frozen=True)
class CachingAllocatorResult:
    """Allocator calls inside the steps and the allocator's totals over time on the rank's GPUs."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    device: str | None
    device_memory_bytes: int | None  # None when the trace does not say
    calls: NamedRows
    allocated_bytes: I64  # after each memory event, in time order (empty without memory events)
    reserved_bytes: I64
    no_memory_reason: str = NO_GPU_MEMORY  # why there are no memory events, as it fits the program

    @property
    def has_memory_events(self) -> bool:
        return len(self.reserved_bytes) > 0

    @property
    def at_reserved_peak(self) -> tuple[np.int64, np.int64]:
        """(reserved, allocated) bytes at the first peak of reserved memory (memory events needed)."""
        i = int(np.argmax(self.reserved_bytes))
        return self.reserved_bytes[i], self.allocated_bytes[i]


def compute_caching_allocator(trace: Trace, rank: int) -> CachingAllocatorResult:
    """The rank's allocator calls inside its steps and its GPU allocator totals over time."""
    rt = in_step_rows(trace, rank, (int(EventKind.RUNTIME), int(EventKind.DRIVER)))
    rt = rt[trace.strings.mask(is_alloc_call)[trace.events["name"][rt]]]
    wins = step_windows(trace, rank)
    if not wins.has_steps:  # the one window: not the set-up before it (cudaMalloc of the whole problem)
        rt = rt[window_of(wins, trace.events["ts_ns"][rt]) >= 0]
    mem = trace.memory
    sel = (mem["rank"] == rank) & (mem["device_type"] == GPU_DEVICE) & (mem["total_reserved"] >= 0)
    order = np.argsort(mem["ts_ns"][sel], kind="stable")
    dev = trace.device_of_rank(rank)
    return CachingAllocatorResult(
        rank=rank, step_count=len(kept_steps(trace, rank)), device=dev.name if dev is not None else None,
        device_memory_bytes=(dev.total_memory_bytes or None) if dev is not None else None,
        calls=named_rows(trace, rt), allocated_bytes=mem["total_allocated"][sel][order].astype(np.int64),
        reserved_bytes=mem["total_reserved"][sel][order].astype(np.int64),
        no_memory_reason=NO_DEVICE if not has_device(trace, rank) else hint_for(trace, NO_GPU_MEMORY,
                                                                               NO_GPU_MEMORY_NATIVE))
