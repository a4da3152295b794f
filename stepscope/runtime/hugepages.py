"""numpy's transparent-huge-page hint, switched off while a trace is built.

numpy asks the kernel for huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MB or more.
Where the kernel compacts memory to find one at the first touch (``defrag`` set to ``madvise`` or
``always``, the common default) and memory is fragmented, as on a machine that has run jobs for a
while, each such fault stalls: measured on the benchmark machine, touching 1.6 GB of fresh 80 MB
arrays took 3.4 s with the hint and 0.56 s without; the end of a 1 GB ingest, 0.60 s and 0.47 s
(medians of six).
Ingest makes many fresh arrays of that size once, so it goes without the hint.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any, cast

from stepscope.runtime.counted import CountedSetting

_SETTING = CountedSetting()  # process-wide: the hint comes back when the last open block closes


def _switch() -> Callable[[bool], bool] | None:
    """numpy's setter of the hint (it returns the previous value), or None where numpy lacks it."""
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, numpy 1
        try:
            fn: Any = getattr(importlib.import_module(module), "_set_madvise_hugepage", None)
        except ImportError:
            continue
        if callable(fn):
            return cast(Callable[[bool], bool], fn)
    return None


@contextlib.contextmanager
def without_hugepage_hint() -> Iterator[None]:
    """numpy allocates without the huge-page hint inside this block (loads on several threads
    included); numpy's own setting is back once the last block has ended."""
    switch = _switch()
    if switch is None:
        yield
        return

    def off() -> Callable[[], bool]:
        before = switch(False)
        return lambda: switch(before)

    with _SETTING.held(off):
        yield
