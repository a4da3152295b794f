"""The canonical trace: tables of columns plus per-rank metadata and ingest diagnostics.

A :class:`Trace` is built once by ``stepscope.load`` (readers feed it, ``derive`` links it) and
never mutated afterwards; analyses only read it.

Tables (see :mod:`stepscope.model.schema` for every column and unit):

=========  =====================================================================
events     every slice / instant: host ops, runtime calls, kernels, copies ...
tracks     one row per (rank, pid, tid): CPU thread or GPU stream
steps      one row per (rank, ProfilerStep#N), host span and GPU-stretched end
memory     allocator events (``[memory]``): +/- bytes, totals after the event
counters   counter samples (``ph: C``), system metrics from ``stepscope run``
flows      raw flow endpoints (``ac2g``, ``fwdbwd``)
=========  =====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stepscope.model import display, frames
from stepscope.model.diagnostics import Diagnostic
from stepscope.model.masks import any_of
from stepscope.model.schema import GPU_KINDS, EventKind
from stepscope.model.strings import StringPool
from stepscope.model.table import Table

#: the largest world size a trace's ``distributedInfo`` may give (a job of a million ranks is beyond any real one)
WORLD_SIZE_MAX = 1 << 20


@dataclass(frozen=True)
class DeviceInfo:
    """One GPU/NPU as the trace's ``deviceProperties`` describe it."""

    index: int
    name: str
    total_memory_bytes: int | None = None
    compute_major: int | None = None
    compute_minor: int | None = None
    sm_count: int | None = None
    max_threads_per_block: int | None = None
    max_threads_per_sm: int | None = None
    regs_per_block: int | None = None
    regs_per_sm: int | None = None
    warp_size: int | None = None
    shared_mem_per_block: int | None = None
    shared_mem_per_sm: int | None = None
    shared_mem_per_block_optin: int | None = None
    vendor: str = "nvidia"  # nvidia | amd | ascend | unknown

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


#: ``RankInfo.metadata`` key: the wall times (ns) of the steps ``stepscope run`` timed without the profiler
#: (``ingest.step_records``), where its step log lies beside the rank's trace
UNPROFILED_STEPS_KEY = "unprofiled_step_ns"
#: ``RankInfo.metadata`` key: the step (ns) the user timed without the profiler and gave (``--step-ms``)
UNPROFILED_GIVEN_KEY = "unprofiled_step_ns_given"


@dataclass(frozen=True)
class RankInfo:
    """What one rank's file says about itself."""

    rank: int
    source: str  # file path it came from
    world_size: int | None = None
    backend: str | None = None
    devices: tuple[DeviceInfo, ...] = ()
    distributed: dict[str, Any] = field(default_factory=dict)  # distributedInfo as recorded
    metadata: dict[str, Any] = field(default_factory=dict)  # versions, trace_id, schema ...
    time_base_ns: int = 0  # add to ts_ns to get the absolute Unix time in ns, when known
    span: str = ""  # tensorboard_trace_handler timestamp suffix, when read from such a layout
    platform: str = "cuda"  # cuda | rocm | cpu | ascend


@dataclass(frozen=True)
class Trace:
    """The canonical, fully linked trace of one run (one or many ranks)."""

    events: Table
    tracks: Table
    steps: Table
    memory: Table
    counters: Table
    flows: Table
    strings: StringPool
    ranks: tuple[RankInfo, ...]
    diagnostics: tuple[Diagnostic, ...]
    source: str

    # ---- small conveniences; analyses build on these, never on per-event loops ----
    @property
    def rank_ids(self) -> list[int]:
        return [r.rank for r in self.ranks]

    def rank_info(self, rank: int) -> RankInfo:
        for r in self.ranks:
            if r.rank == rank:
                return r
        raise KeyError(rank)

    def names(self, ids: npt.NDArray[np.integer]) -> npt.NDArray[np.object_]:
        """Decode a string-id column."""
        return self.strings.decode(ids)

    def kind_mask(self, *kinds: EventKind) -> npt.NDArray[np.bool_]:
        return any_of(self.events["kind"], kinds)

    def gpu_mask(self) -> npt.NDArray[np.bool_]:
        return self.kind_mask(*GPU_KINDS)

    def rank_mask(self, rank: int) -> npt.NDArray[np.bool_]:
        return np.asarray(self.events["rank"] == rank)

    def rank_slice(self, rank: int) -> slice:
        """The contiguous rows of one rank's events (events are sorted by track, tracks by rank)."""
        r = self.events["rank"]
        if len(r) and r.strides[0] == 0:  # one rank: a broadcast value, which searchsorted would copy out
            n, value = len(r), int(r[0])
            return slice(0 if value >= rank else n, 0 if value > rank else n)
        lo = int(np.searchsorted(r, rank, side="left"))
        return slice(lo, int(np.searchsorted(r, rank, side="right")))

    def device_of_rank(self, rank: int) -> DeviceInfo | None:
        """The GPU that rank's kernels ran on (the most used device), or None for CPU-only ranks."""
        info = self.rank_info(rank)
        ev = self.events
        gpu = self.gpu_mask() & (ev["rank"] == rank)
        if not gpu.any():
            return None
        dev = self.tracks["device"][ev["track"][gpu]]
        dev = dev[dev >= 0]
        idx = int(np.bincount(dev).argmax()) if len(dev) else 0
        for d in info.devices:
            if d.index == idx:
                return d
        return info.devices[0] if info.devices else None

    @property
    def event_count(self) -> int:
        return len(self.events)

    # ---- notebooks and other tools (model/frames.py, model/display.py) ----
    def to_arrow(self, table: str = "events", *, decode: bool = True) -> pa.Table:
        """A table (events, tracks, steps, memory, counters, flows) as Arrow; string ids decoded to
        dictionary columns unless ``decode=False``."""
        return frames.to_arrow(self, table, decode)

    def to_pandas(self, table: str = "events", *, decode: bool = True) -> Any:
        """A table as a pandas DataFrame (string columns as categoricals); needs pandas."""
        return frames.to_pandas(self, table, decode)

    def to_polars(self, table: str = "events", *, decode: bool = True) -> Any:
        """A table as a polars DataFrame; needs polars."""
        return frames.to_polars(self, table, decode)

    def _repr_html_(self) -> str:
        return display.trace_html(self)
