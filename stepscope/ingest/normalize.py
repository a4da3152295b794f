"""Raw categories and names → canonical kinds, decided once per unique string.

This is the one table that maps every profiler's spelling onto :class:`EventKind`
(tb_plugin's ``EventTypeMap`` idea), plus the memcpy direction / pageable classifier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from stepscope.model.schema import EventKind, MemcpyKind
from stepscope.model.strings import matchable

MEMO_LIMIT = 1 << 18  # distinct strings remembered per lookup table (bounded memory on odd traces)

CATEGORY_KINDS: dict[str, EventKind] = {
    "cpu_op": EventKind.CPU_OP,
    "operator": EventKind.CPU_OP,
    "user_annotation": EventKind.USER_ANNOTATION,
    "python_function": EventKind.PYTHON_FUNCTION,
    "python": EventKind.PYTHON_FUNCTION,
    "cuda_runtime": EventKind.RUNTIME,
    "runtime": EventKind.RUNTIME,
    "hip_runtime": EventKind.RUNTIME,
    "xpu_runtime": EventKind.RUNTIME,
    "mtia_runtime": EventKind.RUNTIME,
    "privateuse1_runtime": EventKind.RUNTIME,
    "cuda_driver": EventKind.DRIVER,
    "xpu_driver": EventKind.DRIVER,
    "privateuse1_driver": EventKind.DRIVER,
    "kernel": EventKind.KERNEL,
    "gpu_memcpy": EventKind.MEMCPY,
    "memcpy": EventKind.MEMCPY,
    "gpu_memset": EventKind.MEMSET,
    "memset": EventKind.MEMSET,
    "gpu_user_annotation": EventKind.GPU_USER_ANNOTATION,
    "trace": EventKind.TRACE,
    "overhead": EventKind.OVERHEAD,
    "cpu_instant_event": EventKind.INSTANT,
}


def kind_of_category(cat: str) -> int:
    """EventKind code for a raw ``cat`` value (case-insensitive), OTHER when unknown."""
    return int(CATEGORY_KINDS.get(cat.strip().lower(), EventKind.OTHER))


def memcpy_kind(name: str) -> int:
    """Copy direction from a memcpy name such as ``Memcpy HtoD (Pageable -> Device)``."""
    n = name.replace(" ", "").lower()
    for key, kind in (("htod", MemcpyKind.H2D), ("dtoh", MemcpyKind.D2H), ("dtod", MemcpyKind.D2D),
                      ("htoh", MemcpyKind.H2H), ("ptop", MemcpyKind.P2P), ("peer", MemcpyKind.P2P)):
        if key in n:
            return int(kind)
    return int(MemcpyKind.UNKNOWN)


def memcpy_pageable(name: str) -> int:
    """1 when a copy's name says pageable host memory, 0 when it names pinned/device only, -1 unknown."""
    n = name.lower()
    if "pageable" in n:
        return 1
    if "pinned" in n or "device -> device" in n or "(device" in n:
        return 0
    return -1


def phase_code(ph: str) -> int:
    """The single-letter chrome-trace phase as a small int (0 when empty)."""
    return ord(ph[0]) if ph else 0


class Lut:
    """``fn`` of every string of a pool as a lookup table by string id (id -1 reads ``missing``).

    Values are remembered by string, not by id: an ingest makes one small pool per chunk in each
    decoding process, and each distinct string is classified once per process all the same; ``fn``
    sees a string's first ``MATCH_PREFIX`` characters (see :func:`stepscope.model.strings.matchable`)."""

    def __init__(self, fn: Callable[[str], int], dtype: type[np.generic] = np.int32, missing: int = 0) -> None:
        self.fn, self.dtype, self.missing = fn, dtype, missing
        self.memo: dict[str, int] = {}

    def table(self, strings: Sequence[str]) -> npt.NDArray[np.generic]:
        if len(self.memo) > MEMO_LIMIT:
            self.memo.clear()
        got = list(map(self.memo.get, strings))  # strings seen before: looked up in C
        if None in got:
            got = [self._value(s) if v is None else v for s, v in zip(strings, got)]
        got.append(self.missing)
        return np.array(got, dtype=self.dtype)

    def _value(self, s: str) -> int:
        v = self.memo.get(s)
        if v is None:
            v = self.memo[s] = self.fn(matchable(s))
        return v


KIND = Lut(kind_of_category, np.int8)
COPY_KIND = Lut(memcpy_kind, np.int8)
PAGEABLE = Lut(memcpy_pageable, np.int8, -1)
