"""A trace with no event at all is refused like a file that is not a trace.

``{"traceEvents": []}``, ``[1, 2, 3]`` or a SQLite export without a kernel parse without error, but
give every analysis nothing to work on: the report would be a page of zero tables ("bound by
compute, device busy 0.0 %"). :func:`refuse_empty` makes such a load one
:class:`~stepscope.errors.TraceFormatError` naming the path. A trace with a single event is read as
usual, and so is a run directory where only some rank files are empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from stepscope.errors import TraceFormatError
from stepscope.model.trace import Trace


def holds_nothing(trace: Trace) -> bool:
    """No slice, instant, memory event or counter sample in any rank: nothing to analyse."""
    return not (len(trace.events) or len(trace.memory) or len(trace.counters))


def no_events_error(path: str | Path, n_files: int = 1, ranks: Sequence[int] | None = None,
                    truncated: bool = False) -> TraceFormatError:
    """The one-line error for a load of ``n_files`` files (of ``ranks`` when chosen) without any event."""
    if ranks:
        listed = ", ".join(map(str, sorted(ranks)))
        why = f"rank {listed} holds no trace events" if len(ranks) == 1 else f"ranks {listed} hold no trace events"
    elif n_files > 1:
        why = f"none of its {n_files} trace files holds a trace event"
    elif truncated:
        why = "the file is cut short before its first complete event: no trace events"
    else:
        why = "no trace events in it (its event list is empty, or holds only metadata or entries that are not events)"
    return TraceFormatError(f"{why}; nothing to analyse", path)


def refuse_empty(trace: Trace, path: str | Path, n_files: int = 1, ranks: Sequence[int] | None = None) -> Trace:
    """``trace`` itself, or a :class:`TraceFormatError` when it :func:`holds_nothing`."""
    if holds_nothing(trace):
        truncated = any(d.name == "truncated-file" for d in trace.diagnostics)
        raise no_events_error(path, n_files, ranks, truncated)
    return trace
