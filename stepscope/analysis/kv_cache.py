"""A key/value cache that grows by concatenation: every generated token copies the whole cache.

Autoregressive decoding keeps each attention layer's keys and values of the tokens so far. Written as
``k = torch.cat([cache_k, k_new], dim=2)`` — Hugging Face's default ``DynamicCache`` does it, and so do
hand-written decoders — every token allocates a new cache one token longer and copies the old one into
it: the time grows with the length, the shapes change every token (a CUDA graph or ``torch.compile``
cannot keep them), and the decode loop pays the copies on the host (CPU) or the device. A preallocated
cache (``StaticCache``, ``generate(cache_implementation="static")``, or a ``[B, H, max_len, D]`` buffer
written in place) writes only the new token and keeps the shapes fixed.

What the copies cost is not read off the trace: the profiler's own cost per recorded op inflates a cat's
time, and an in-place write is a recorded op too. A 4-layer decoder on the CPU (2026-11-28, batch 1, 64 tokens
a step, lengths 16-79, docs/analyses/kv_cache.md): its cat calls take 9.4-12.4 ms of the recorded step, while
the same program with a preallocated cache measured 38.5 ms a step without the profiler against 38.0-39.5
ms — no saving at these lengths. So it is evidence, not a gain: ``launch-bound``'s change says a graph
needs the fixed shapes a preallocated cache gives.

Detected from the recorded shapes (``record_shapes=True``): ``aten::cat`` calls of two tensors equal in
every dimension but one, the second a few positions long there (the new tokens), the first of a length
that takes at least :data:`MIN_LENGTHS` values in the steps — a *family* per cached tensor shape. A
hand-written 4-layer decoder on the CPU (an outside capture, 64 tokens a step): 8 families (K and V of 4
layers share one shape: 1 family), 512 cat calls a step; Hugging Face GPT-2 ``generate`` on an H200: the
keys and values (``[1, 12, L, 64]``) and the generated ids (``[1, L]``), lengths 64 to 95.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, in_step_rows, launched_by
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

#: a family of concatenations is a growing cache from this many distinct cached lengths in the steps
MIN_LENGTHS = 8
#: the appended tensor is at most this long along the growing dimension (one token, a few when speculating)
MAX_APPENDED = 4
_CAT = ("aten::cat", "aten::_cat", "aten::concat", "aten::concatenate")


@dataclass(frozen=True)
class GrowingCache:
    """The rank's concatenations that grow a cache, in its steps."""

    rank: int
    families: int  # growing caches (a layer's keys, its values: one per cached tensor shape)
    step_count: int
    rows: I64  # their cat op rows in the steps
    host_ns: int  # the cat ops' host time (their whole duration: dispatch, allocation, the copy on a CPU)
    device_ns: int  # the device time of the work they launched (0 on a CPU-only rank)
    shortest: int  # the shortest and longest cached lengths seen
    longest: int
    cache_shape: str  # the largest grown tensor's shape at its longest, e.g. "1 × 12 × 95 × 64"

    @property
    def calls_per_step(self) -> float:
        return len(self.rows) / max(self.step_count, 1)


def _family(text: str) -> tuple[tuple[int, ...], int, int] | None:
    """``(the shape with the growing dimension as -1, that dimension, the cached length)`` of a cat of
    two tensors that differ in one dimension only, the second at most :data:`MAX_APPENDED` long there."""
    try:
        dims = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(dims, list) or not dims or not isinstance(dims[0], list) or len(dims[0]) != 2:
        return None
    a, b = dims[0]
    if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b) or len(a) < 2:
        return None
    if not all(type(x) is int for x in (*a, *b)):
        return None
    differ = [k for k in range(len(a)) if a[k] != b[k]]
    if len(differ) != 1 or not 1 <= b[differ[0]] <= MAX_APPENDED:
        return None
    k = differ[0]
    return (*a[:k], -1, *a[k + 1:], *b), k, a[k]


@per_rank
def compute_kv_cache(trace: Trace, rank: int) -> GrowingCache:
    """The rank's growing-cache concatenations (NotApplicable without step-recorded cat shapes)."""
    ev = trace.events
    ops = in_step_rows(trace, rank, (int(EventKind.CPU_OP),))
    ops = ops[trace.strings.mask(lambda s: s in _CAT)[ev["name"][ops]] & (ev["input_dims"][ops] >= 0)]
    if len(ops) == 0:
        raise NotApplicable("no concatenation with recorded shapes in the steps")
    ids, inv = np.unique(ev["input_dims"][ops], return_inverse=True)
    parsed = [_family(trace.strings[int(i)]) for i in ids.tolist()]  # per distinct shape text
    keys = {p[:2] for p in parsed if p is not None}
    lengths = {key: {p[2] for p in parsed if p is not None and p[:2] == key} for key in keys}
    growing = {key for key, seen in lengths.items() if len(seen) >= MIN_LENGTHS}
    hit = np.array([p is not None and p[:2] in growing for p in parsed], bool)
    rows = ops[hit[inv.ravel()]]
    if len(rows) == 0:
        raise NotApplicable("no concatenation grows a cache")
    seen = sorted(length for key in growing for length in lengths[key])
    steps = np.unique(ev["step"][rows])
    return GrowingCache(rank, len(growing), len(steps), rows, int(ev["dur_ns"][rows].sum()),
                        int(ev["dur_ns"][launched_by(trace, rank, rows)].sum()), seen[0], seen[-1],
                        _largest_shape(parsed, growing))


def _largest_shape(parsed: list[tuple[tuple[int, ...], int, int] | None], growing: set[tuple[tuple[int, ...], int]]
                   ) -> str:
    """The largest grown tensor at its longest, its dimensions joined by " × "."""
    shapes = [tuple(p[2] if i == p[1] else x for i, x in enumerate(p[0][:len(p[0]) // 2]))
              for p in parsed if p is not None and p[:2] in growing]  # a key: the first tensor's shape, the second's
    return " × ".join(map(str, max(shapes, key=lambda sh: (math.prod(sh), sh))))

