"""Find event boundaries in a chrome-trace byte buffer without decoding it.

A trace's ``traceEvents`` array is cut into chunks at event boundaries so chunks decode in
parallel, and a truncated file yields every complete event. The scan is vectorised with numpy:
quotes (minus escaped ones) mark strings, and braces/brackets outside strings give the depth.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_QUOTE, _BACKSLASH = 34, 92
_OPEN_CURLY, _CLOSE_CURLY, _OPEN_SQUARE, _CLOSE_SQUARE = 123, 125, 91, 93
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')


@dataclass(frozen=True)
class ScanResult:
    """Events found in a buffer that starts inside the events array (depth 0)."""

    starts: npt.NDArray[np.int64]  # offset of each complete event's '{'
    ends: npt.NDArray[np.int64]  # offset one past its '}'
    array_end: int  # offset of the ']' closing the events array, or -1 when not in the buffer
    partial_start: int  # offset of an event that begins but never closes (truncation), or -1


def _unescaped_quotes(a: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    q = np.flatnonzero(a == _QUOTE)
    cand = q[(q > 0) & (a[np.maximum(q - 1, 0)] == _BACKSLASH)]
    if len(cand) == 0:
        return q
    escaped = np.zeros(len(cand), bool)
    for i, pos in enumerate(cand.tolist()):  # rare: only quotes right after a backslash
        run = 0
        while pos - 1 - run >= 0 and a[pos - 1 - run] == _BACKSLASH:
            run += 1
        escaped[i] = run % 2 == 1
    return np.setdiff1d(q, cand[escaped], assume_unique=True)


def scan_events(buf: bytes | memoryview, in_string: bool = False) -> ScanResult:
    """Locate complete top-level objects of an array whose body starts at ``buf[0]``."""
    a = np.frombuffer(buf, dtype=np.uint8)
    q = _unescaped_quotes(a)
    s = np.flatnonzero((a == _OPEN_CURLY) | (a == _CLOSE_CURLY) | (a == _OPEN_SQUARE) | (a == _CLOSE_SQUARE))
    parity = np.searchsorted(q, s) % 2
    s = s[parity == (1 if in_string else 0)]
    chars = a[s]
    delta = np.where((chars == _OPEN_CURLY) | (chars == _OPEN_SQUARE), 1, -1)
    depth = np.cumsum(delta)
    below = np.flatnonzero(depth < 0)
    array_end = int(s[below[0]]) if len(below) else -1
    if len(below):
        s, delta, depth, chars = s[: below[0]], delta[: below[0]], depth[: below[0]], chars[: below[0]]
    opens = s[(depth == 1) & (delta == 1)]
    closes = s[(depth == 0) & (delta == -1)]
    partial = int(opens[len(closes)]) if len(opens) > len(closes) else -1
    return ScanResult(opens[: len(closes)].astype(np.int64), closes.astype(np.int64) + 1, array_end, partial)


def find_events_array(head: bytes) -> tuple[int, bool]:
    """Offset just past the '[' that opens the events, and whether the file is a bare list.

    Returns (-1, False) when the head holds no events array.
    """
    stripped = head.lstrip()
    if stripped[:1] == b"[":
        return len(head) - len(stripped) + 1, True
    m = _EVENTS_KEY.search(head)
    if m is None:
        return -1, False
    return m.end(), False


def event_separator(buf: bytes) -> re.Pattern[bytes] | None:
    """A pattern of the exact bytes Kineto writes between two events ("},\\n  {"), if visible.

    Every distinct separator seen between consecutive events of ``buf`` is an alternative, so a file
    whose first events are laid out differently from the rest (``stepscope run`` writes its counter
    samples compactly before Kineto's own events) is still cut at event boundaries all through."""
    res = scan_events(buf)
    if len(res.starts) < 2:
        return None
    seps = {buf[e - 1 : s + 1] for e, s in zip(res.ends[:-1].tolist(), res.starts[1:].tolist())}  # per event pair
    seps = {sep for sep in seps if 3 <= len(sep) <= 64}
    if not seps:
        return None
    return re.compile(b"|".join(re.escape(sep) for sep in sorted(seps, key=len, reverse=True)))
