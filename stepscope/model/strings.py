"""Interned strings: every name in the model is an int32 id into one pool per trace."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

#: names are classified on at most this many leading characters (:meth:`StringPool.mask` / ``map``):
#: a pattern over a 200 MB name took minutes; the full name is kept for display
MATCH_PREFIX = 4096


def matchable(s: str) -> str:
    """The part of a name that classifiers look at: its first :data:`MATCH_PREFIX` characters."""
    return s if len(s) <= MATCH_PREFIX else s[:MATCH_PREFIX]


class StringPool:
    """An append-only table of unique strings, looked up by id.

    Classify each unique string once (:meth:`mask`, :meth:`map`) and index the
    result with an id column, instead of looking at strings per event.
    """

    def __init__(self, strings: Iterable[str] = ()) -> None:
        # mask() results per predicate function, with the pool size they cover: analyses that ask the
        # same classification (Tensor-Core kernels, communication ops ...) scan the strings once
        self._masks: weakref.WeakKeyDictionary[Callable[[str], bool], tuple[int, npt.NDArray[np.bool_]]] = \
            weakref.WeakKeyDictionary()
        self._strings: list[str] = list(strings)
        self._ids: dict[str, int] = dict(zip(self._strings, range(len(self._strings))))  # in C
        self._matchable: tuple[int, list[str]] = (0, [])  # (pool length, its strings cut for matching)
        if len(self._ids) < len(self._strings):  # a repeated string: keep its first id only
            given, self._strings, self._ids = self._strings, [], {}
            for s in given:
                self.intern(s)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable without the remembered masks (weak references do not pickle) and the strings cut
        for matching (made again on demand)."""
        state = dict(self.__dict__)
        state.pop("_masks", None)
        state.pop("_matchable", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._masks = weakref.WeakKeyDictionary()
        self._matchable = (0, [])

    def __len__(self) -> int:
        return len(self._strings)

    def __getitem__(self, sid: int) -> str:
        return self._strings[sid] if sid >= 0 else ""

    def intern(self, s: str) -> int:
        """Return the id of ``s``, adding it when new."""
        sid = self._ids.get(s)
        if sid is None:
            sid = len(self._strings)
            self._ids[s] = sid
            self._strings.append(s)
        return sid

    def intern_many(self, strings: Sequence[str]) -> npt.NDArray[np.int32]:
        """Ids of many strings at once (new ones are added); known strings are looked up in C."""
        found = list(map(self._ids.get, strings))
        if None in found:
            found = [sid if sid is not None else self.intern(s) for s, sid in zip(strings, found)]
        return np.array(found, dtype=np.int32) if found else np.zeros(0, np.int32)

    def id_map(self, strings: Sequence[str]) -> npt.NDArray[np.int32]:
        """Translate ids of another pool holding ``strings`` into this one (new strings are added):
        ``pool.id_map(other.strings)[other_ids]``; the trailing entry keeps id -1 at -1."""
        return np.append(self.intern_many(strings), np.int32(-1))

    def find(self, s: str) -> int:
        """Id of ``s``, or -1 when the pool does not hold it."""
        return self._ids.get(s, -1)

    @property
    def strings(self) -> list[str]:
        return self._strings

    def as_array(self) -> npt.NDArray[np.object_]:
        """All strings as an object array, so ``pool.as_array()[ids]`` decodes a column."""
        arr = np.empty(len(self._strings) + 1, dtype=object)
        arr[:-1] = self._strings
        arr[-1] = ""  # id -1 decodes to ""
        return arr

    def decode(self, ids: npt.NDArray[np.integer]) -> npt.NDArray[np.object_]:
        """Decode an id column to strings (-1 → "")."""
        out: npt.NDArray[np.object_] = self.as_array()[ids]
        return out

    def mask(self, predicate: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
        """Boolean per string id (plus a trailing False for id -1): index it with an id column;
        ``predicate`` sees each string's first :data:`MATCH_PREFIX` characters.

        Remembered per predicate function while it lives and the pool does not grow; a copy is returned."""
        hit = self._masks.get(predicate)
        if hit is not None and hit[0] == len(self._strings):
            cached: npt.NDArray[np.bool_] = hit[1].copy()
            return cached
        out = np.zeros(len(self._strings) + 1, dtype=bool)
        out[:-1] = list(map(predicate, self.for_matching()))
        self._masks[predicate] = (len(self._strings), out.copy())
        return out

    def map(self, fn: Callable[[str], int], dtype: type[np.generic] = np.int32,
            missing: int = -1) -> npt.NDArray[Any]:
        """An integer per string id (plus ``missing`` for id -1), e.g. a category code; ``fn`` sees
        each string's first :data:`MATCH_PREFIX` characters."""
        out = np.full(len(self._strings) + 1, missing, dtype=dtype)
        out[:-1] = list(map(fn, self.for_matching()))
        return out

    def for_matching(self) -> list[str]:
        """Every string cut to its first :data:`MATCH_PREFIX` characters (the pool's own list when
        none is longer), remembered until the pool grows."""
        n, cut = self._matchable
        if n != len(self._strings):
            long = bool(self._strings) and max(map(len, self._strings)) > MATCH_PREFIX
            cut = list(map(matchable, self._strings)) if long else self._strings
            self._matchable = (len(self._strings), cut)
        return cut
