"""Hand-made allocator snapshots (``torch.cuda.memory._snapshot()``'s shape) for the serving tests."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

T0_US = 1_000_000


def frames(*sites: str) -> list[dict[str, Any]]:
    """A library frame (site-packages) then the user's frames ``/src/<site>.py:<10+i> <site>``."""
    return [{"filename": "/venv/site-packages/torch/x.py", "line": 1, "name": "inner"}] + \
        [{"filename": f"/src/{s}.py", "line": i + 10, "name": s} for i, s in enumerate(sites)]


def entry(action: str, addr: int, size: int, t_ms: float, *sites: str) -> dict[str, Any]:
    return {"action": action, "addr": addr, "size": size, "time_us": T0_US + int(t_ms * 1000), "stream": 0,
            "frames": frames(*sites) if sites else []}


def small() -> dict[str, Any]:
    """Live bytes 100, 400, 300, 1000 (the peak, at +40 ms), 700, 750: at the peak 700 B from a.py:10 and
    300 B from b.py:10 are live; 0x1000's first allocation (100 B) was freed before it."""
    trace = [entry("segment_alloc", 0x1000, 4096, 0), entry("alloc", 0x1000, 100, 10, "a"),
             entry("alloc", 0x2000, 300, 20, "b"), entry("free_requested", 0x1000, 100, 25, "a"),
             entry("free_completed", 0x1000, 100, 30, "a"), entry("alloc", 0x1000, 700, 40, "a"),
             entry("free_completed", 0x2000, 300, 50, "b"), entry("alloc", 0x3000, 50, 60, "b")]
    seg = {"device": 0, "address": 0x1000, "total_size": 4096, "allocated_size": 750, "active_size": 750,
           "requested_size": 750, "stream": 0, "segment_type": "small", "frames": [],
           "blocks": [{"address": 0x1000, "size": 700, "requested_size": 700, "state": "active_allocated",
                       "frames": frames("a")},
                      {"address": 0x3000, "size": 50, "requested_size": 50, "state": "active_allocated", "frames": []},
                      {"address": 0x4000, "size": 3346, "requested_size": 0, "state": "inactive", "frames": []}]}
    return {"segments": [seg], "device_traces": [trace], "allocator_settings": {"expandable_segments": False}}


def sawtooth(steps: int = 1500) -> dict[str, Any]:
    """``steps`` steps 1 ms apart, each allocating ``1 KiB * (k % 7 + 1)`` at ``/src/step.py`` (+k.1 ms) and
    freeing the previous step's block (+k.5 ms); one 1 MiB block from ``/src/big.py`` allocated at +700.2 ms
    and freed at +701.0 ms. Peak: 1 MiB + 8 KiB at +700.2 ms (the big block, step 700's 1 KiB, step 699's
    7 KiB); elsewhere at most 13 KiB is live."""
    trace: list[dict[str, Any]] = [entry("segment_alloc", 0x10_0000, 8 << 20, 0)]
    for k in range(steps):
        if k == 701:
            trace.append(entry("free_completed", 0x80_0000, 1 << 20, 701.0, "big"))
        trace.append(entry("alloc", 0x10_0000 + (k % 2) * 0x10_000, 1024 * (k % 7 + 1), k + 0.1, "step"))
        if k == 700:
            trace.append(entry("alloc", 0x80_0000, 1 << 20, 700.2, "big"))
        if k:
            prev = 0x10_0000 + ((k - 1) % 2) * 0x10_000
            trace.append(entry("free_completed", prev, 1024 * ((k - 1) % 7 + 1), k + 0.5, "step"))
    seg = {"device": 0, "address": 0x10_0000, "total_size": 8 << 20, "allocated_size": 0, "active_size": 0,
           "requested_size": 0, "stream": 0, "segment_type": "large", "frames": [], "blocks": []}
    return {"segments": [seg], "device_traces": [trace], "allocator_settings": {}}


def write(path: Path, snap: dict[str, Any]) -> Path:
    path.write_bytes(pickle.dumps(snap, protocol=4))
    return path


def two_devices() -> dict[str, Any]:
    """Device 0: :func:`small` (peak 1000 B at +40 ms); device 1: :func:`sawtooth` (peak 1 MiB + 8 KiB at
    +700.2 ms), each with its segment."""
    a, b = small(), sawtooth()
    seg1 = {**b["segments"][0], "device": 1}
    return {"segments": [a["segments"][0], seg1], "device_traces": [a["device_traces"][0], b["device_traces"][0]],
            "allocator_settings": {}}
