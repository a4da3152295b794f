"""Events kept as evidence with their names: the rows an analysis singles out (the pageable copies,
the optimizer's kernels, the convolutions' layout transforms ...), so that a view, the JSON document
and an advisor finding list the same top names with the same times.

``names`` holds the distinct names in string-id order and ``name`` indexes it per row, so grouping
by ``name`` orders ties exactly as grouping by the string ids does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._groups import group_keys, largest_first
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
#: (name, count, summed duration in ns) of one name among the rows
NameTotal = tuple[str, int, float]


@dataclass(frozen=True)
class NamedRows:
    """Event rows with their durations and names (``names[name[i]]`` is row ``rows[i]``'s name)."""

    rows: I64
    dur_ns: I64
    name: I64
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def total_ns(self) -> int:
        return int(self.dur_ns.sum())

    def top(self, k: int = 5) -> list[NameTotal]:
        """The ``k`` names with the largest summed duration among the rows, ties by name (the same
        order however the file ordered its events): (name, count, total ns)."""
        if len(self.name) == 0:
            return []
        (uniq,), inv = group_keys(self.name)
        tot = np.bincount(inv, weights=self.dur_ns, minlength=len(uniq))
        cnt = np.bincount(inv, minlength=len(uniq))
        order = largest_first(tot, [self.names[int(i)] for i in uniq.tolist()])[:k]
        return [(self.names[int(uniq[i])], int(cnt[i]), float(tot[i])) for i in order.tolist()]

    def subset(self, mask: B) -> NamedRows:
        """The rows of ``mask`` (names kept whole)."""
        return NamedRows(self.rows[mask], self.dur_ns[mask], self.name[mask], self.names)


def named_rows(trace: Trace, rows: I64, dur_ns: I64 | None = None) -> NamedRows:
    """The given event rows, their durations (or the time given per row, e.g. an op's kernel time) and
    their names."""
    rows = np.asarray(rows, np.int64)
    ids = trace.events["name"][rows]
    (uniq,), inv = group_keys(ids)
    names = tuple(str(s) for s in trace.strings.decode(uniq))
    dur = trace.events["dur_ns"][rows] if dur_ns is None else dur_ns
    return NamedRows(rows, np.asarray(dur, np.int64), np.asarray(inv, np.int64).reshape(-1), names)
