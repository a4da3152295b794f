"""A run's rank models for the views that need events (timeline windows, what-if, the diff's side).

A run analysed whole (:class:`WholeRun`) keeps its one multi-rank model, as before. A run analysed
through map-reduce (:class:`LazyRanks`, docs/scale.md) keeps no events: a view that needs a rank's
events loads that rank alone from the content-keyed cache the map step wrote
(:func:`~stepscope.mapreduce.driver.load_rank`), with a memo holding the job's facts
(:func:`~stepscope.mapreduce.worker.job_memo`), so its analyses give what they give in the whole
run. The last :data:`LOADED_RANKS` ranks loaded are kept (LRU); the server's memory grows with the
ranks × their summaries plus that many rank models, never with the run's events.

A one-rank model numbers its event rows and tracks from 0; in the run's whole model they follow
the rank files before it. :class:`RankView` carries those offsets (``row_offset``,
``track_offset``) and :func:`shift_window` applies them to a timeline window, so a window is the
same JSON on both paths.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from stepscope.analysis.bundle import Bundle, Memo
from stepscope.mapreduce.driver import MapReduceResult, load_rank
from stepscope.mapreduce.worker import job_memo
from stepscope.model.trace import Trace

#: rank models kept loaded at once by a map-reduce run (each is one rank's whole model)
LOADED_RANKS = 2


@dataclass(frozen=True)
class RankView:
    """A model holding the rank's events, the memo its views run in, and where the rank's rows and
    tracks sit in the run's whole model."""

    trace: Trace
    memo: Memo
    row_offset: int = 0
    track_offset: int = 0


class RankModels(Protocol):
    """Where a run's rank models come from."""

    def view(self, rank: int, keep: bool = True) -> RankView:
        """The rank's model; ``keep=False``: with a memo of its own and not added to a cache (a
        what-if's pass over every rank, whose replayed traces must not stay in a kept memo)."""
        ...


@dataclass(frozen=True)
class WholeRun:
    """A run analysed whole: every rank is in the bundle's one model."""

    bundle: Bundle

    def view(self, rank: int, keep: bool = True) -> RankView:
        return RankView(self.bundle.trace, self.bundle.memo)


class LazyRanks:
    """A map-reduce run: each rank loaded from the cache when a view needs it, the last
    :data:`LOADED_RANKS` kept (see the module docstring)."""

    def __init__(self, result: MapReduceResult, counts: Mapping[int, tuple[int, int]],
                 capacity: int = LOADED_RANKS) -> None:
        """``counts``: rank → (its events, its tracks), for the offsets in the run's whole model."""
        self._result = result
        self._capacity = max(capacity, 1)
        self._offsets = _offsets(result, counts)
        self._loaded: OrderedDict[int, RankView] = OrderedDict()
        self._guard = threading.Lock()
        self._loading = threading.Lock()  # one rank read at a time (each takes a rank's memory)
        self.loads = 0  # ranks read from the cache so far (tests, measurements)

    @property
    def loaded(self) -> tuple[int, ...]:
        """The ranks held now, least recently used first."""
        with self._guard:
            return tuple(self._loaded)

    def view(self, rank: int, keep: bool = True) -> RankView:
        hit = self._hit(rank)
        if hit is not None:
            return hit if keep else self._fresh(hit.trace, rank)
        with self._loading:
            hit = self._hit(rank)
            if hit is not None:
                return hit if keep else self._fresh(hit.trace, rank)
            view = self._fresh(load_rank(self._result, rank), rank)
            self.loads += 1
        if keep:
            with self._guard:
                self._loaded[rank] = view
                while len(self._loaded) > self._capacity:
                    self._loaded.popitem(last=False)
        return view

    def _fresh(self, trace: Trace, rank: int) -> RankView:
        rows, tracks = self._offsets[rank]
        return RankView(trace, job_memo(trace, rank, self._result.jobs[rank]), rows, tracks)

    def _hit(self, rank: int) -> RankView | None:
        with self._guard:
            hit = self._loaded.get(rank)
            if hit is not None:
                self._loaded.move_to_end(rank)
            return hit


def _offsets(result: MapReduceResult, counts: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """rank → (first row, first track) in the run's whole model: the rank files are concatenated in
    the run's file order (``ingest.build.build_trace``)."""
    out: dict[int, tuple[int, int]] = {}
    rows = tracks = 0
    for rank in sorted(result.rank_files, key=lambda r: result.rank_files[r].index):
        out[rank] = (rows, tracks)
        rows, tracks = rows + counts[rank][0], tracks + counts[rank][1]
    return out


def shift_window(window: dict[str, Any], rows: int, tracks: int) -> dict[str, Any]:
    """A timeline window's JSON (``TimelineWindow.to_dict``) with its event rows and track ids
    moved by the rank's offsets in the run's whole model (in place; returned)."""
    if not rows and not tracks:
        return window
    for t in window["tracks"]:
        t["id"] += tracks
    if window.get("events") is not None:
        ev = window["events"]
        ev["row"] = [r + rows for r in ev["row"]]
        ev["track"] = [t + tracks for t in ev["track"]]
    for cells in window.get("aggregate") or []:
        cells["track"] += tracks
    for f in window.get("flows") or []:
        f["from_row"] += rows
        f["to_row"] += rows
        f["from_track"] += tracks
        f["to_track"] += tracks
    for q in window["counters"]["queue_length"]:
        q["track"] += tracks
    return window


def shift_ids(ids: list[int], by: int) -> list[int]:
    """Event rows or track ids of a one-rank model as the run numbers them."""
    return [i + by for i in ids] if by else ids


def shift_details(details: dict[str, Any], rows: int, tracks: int) -> dict[str, Any]:
    """An event's details (``timeline_event.event_details``) with the rows and tracks of the event and
    of every event it refers to (parents, launch call, op, kernels) moved by the rank's offsets."""
    refs = [details, *(details.get("parents") or []), *(details.get("kernels") or []),
            *(r for r in (details.get("launch"), details.get("op")) if r is not None)]
    for ref in refs:
        ref["row"] += rows
        ref["track"] += tracks
    return details
