"""Per-name tables of one run (:class:`SideTable`) and their aligned difference (:class:`DiffTable`).

A side table holds one row per name (or name + input shapes) with the compared value already in
the table's unit and normalised per average step, so runs with different step counts compare
fairly. ``diff_tables`` matches two side tables by key (:mod:`.align`) and returns the rows sorted
by absolute difference, largest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from stepscope.compare.align import KEY_SEP, Alignment, NameMap, align, group_by_key, make_keys

Obj = npt.NDArray[np.object_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
I8 = npt.NDArray[np.int8]

MATCHED, ADDED, REMOVED = 0, 1, 2
STATUS_NAMES = ("matched", "added", "removed")


@dataclass(frozen=True)
class SideTable:
    """One run's rows of one table.

    ======== ============================================================================
    names    display name of each row (str)
    shapes   input shapes of each row (str), or None when not split by shapes
    value    the compared quantity, in the table's unit, per average step
    count    occurrences (calls, launches, allocations) over the selected steps
    extra    further per-row quantities, same unit, per average step (e.g. host self time)
    ======== ============================================================================
    """

    names: Obj
    value: F64
    count: F64
    shapes: Obj | None = None
    extra: dict[str, F64] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def empty(cls) -> SideTable:
        return cls(np.zeros(0, dtype=object), np.zeros(0), np.zeros(0))


@dataclass(frozen=True)
class DiffTable:
    """Two runs' rows of one table, matched by key, sorted by |diff| (largest first).

    ``base_*`` / ``new_*`` are 0 where the key is absent on that side; ``ratio`` = new / base
    (NaN when base is 0); ``status`` is MATCHED, ADDED (only in NEW) or REMOVED (only in BASE).
    """

    table: str
    unit: str  # "ms" or "MB"
    metric: str  # what ``value`` is, for headers and docs (e.g. "device self time")
    keys: Obj
    base_name: Obj
    new_name: Obj
    shapes: Obj | None
    base: F64
    new: F64
    base_count: F64
    new_count: F64
    status: I8
    extra: dict[str, tuple[F64, F64]] = field(default_factory=dict)
    skipped: str | None = None  # why the table is empty (a view missing on one side ...)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def diff(self) -> F64:
        return np.asarray(self.new - self.base, np.float64)

    @property
    def ratio(self) -> F64:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(self.base != 0, self.new / np.where(self.base != 0, self.base, 1), np.nan))

    @property
    def name(self) -> Obj:
        """The display name: the matched (canonical) name, i.e. the key without its shapes part.

        Without a name map it is each side's own name; with one, ``base_name`` / ``new_name`` keep
        the names as each run recorded them.
        """
        if len(self.keys) == 0:
            return self.keys
        return np.asarray([k.split(KEY_SEP, 1)[0] for k in self.keys.tolist()], dtype=object)

    def names_with(self, status: int) -> list[str]:
        return [str(n) for n in self.name[self.status == status]]

    @property
    def added(self) -> list[str]:
        return self.names_with(ADDED)

    @property
    def removed(self) -> list[str]:
        return self.names_with(REMOVED)

    @property
    def matched_count(self) -> int:
        return int((self.status == MATCHED).sum())

    @classmethod
    def skipped_table(cls, table: str, unit: str, metric: str, reason: str) -> DiffTable:
        e, o = np.zeros(0), np.zeros(0, dtype=object)
        return cls(table, unit, metric, o, o, o, None, e, e, e, e, np.zeros(0, np.int8), {}, reason)


def _keyed(table: str, side: SideTable, name_map: NameMap, by_shapes: bool) -> tuple[Obj, Obj, Obj | None,
                                                                                   list[F64]]:
    canon = name_map.apply(table, side.names)
    shapes = side.shapes if by_shapes and side.shapes is not None else None
    keys = make_keys(canon, shapes)
    extras = [side.extra[k] for k in sorted(side.extra)]
    uniq, rep, sums = group_by_key(keys, side.value, side.count, *extras)
    rep_shapes = shapes[rep] if shapes is not None else None
    return uniq, side.names[rep], rep_shapes, sums


def _pick(values: F64, rows: I64) -> F64:
    return np.where(rows >= 0, values[np.maximum(rows, 0)] if len(values) else 0.0, 0.0)


def _pick_obj(values: Obj, rows: I64) -> Obj:
    if len(values) == 0:
        return np.full(len(rows), "", dtype=object)
    return np.asarray(np.where(rows >= 0, values[np.maximum(rows, 0)], ""), dtype=object)


def diff_tables(table: str, unit: str, metric: str, base: SideTable, new: SideTable,
                name_map: NameMap | None = None, by_shapes: bool = False) -> DiffTable:
    """Match two side tables by (mapped) name, optionally + shapes, and sort by |new − base|."""
    nm = name_map or NameMap()
    bk, bnames, bshapes, bsums = _keyed(table, base, nm, by_shapes)
    nk, nnames, nshapes, nsums = _keyed(table, new, nm, by_shapes)
    al: Alignment = align(bk, nk)
    b_val, n_val = _pick(bsums[0], al.base_row), _pick(nsums[0], al.new_row)
    status = np.where(al.base_row < 0, ADDED, np.where(al.new_row < 0, REMOVED, MATCHED)).astype(np.int8)
    order = np.lexsort((np.arange(len(al.keys)), -np.abs(n_val - b_val)))  # keys come sorted from align
    extra_names = sorted(set(base.extra) & set(new.extra))
    extra = {}
    for k in extra_names:
        bi, ni = sorted(base.extra).index(k) + 2, sorted(new.extra).index(k) + 2
        extra[k] = (_pick(bsums[bi], al.base_row)[order], _pick(nsums[ni], al.new_row)[order])
    shapes = None
    if bshapes is not None or nshapes is not None:
        sb = _pick_obj(bshapes if bshapes is not None else np.zeros(0, dtype=object), al.base_row)
        sn = _pick_obj(nshapes if nshapes is not None else np.zeros(0, dtype=object), al.new_row)
        shapes = np.asarray(np.where(sb != "", sb, sn), dtype=object)[order]
    return DiffTable(
        table=table, unit=unit, metric=metric, keys=al.keys[order],
        base_name=_pick_obj(bnames, al.base_row)[order], new_name=_pick_obj(nnames, al.new_row)[order],
        shapes=shapes, base=b_val[order], new=n_val[order],
        base_count=_pick(bsums[1], al.base_row)[order], new_count=_pick(nsums[1], al.new_row)[order],
        status=status[order], extra=extra)
