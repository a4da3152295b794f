"""How many cores this process may run on."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores of this process's CPU affinity where the OS tells it (Linux), else the machine's
    count (macOS and Windows have no ``os.sched_getaffinity``)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)
