"""The server's state: each run analysed at most once, each diff computed at most once.

A :class:`RunStore` holds one slot per discovered run. The first request for a run (or the startup
preload thread) takes that slot's lock and calls :func:`~stepscope.server.results.analyse_run`;
concurrent requests for the same run wait on the lock and then read the same result, so a trace is
never parsed twice. A run that fails to load keeps its error (a message, never a traceback) and is
not retried on every request. Diffs of two runs are cached the same way, keyed by the pair of ids;
timeline windows (computed by ``stepscope.analysis.timeline``) and what-if replays
(``stepscope.analysis.whatif``) in small LRUs. Replays run one at a time (each takes a core for up
to a second on a large trace); requests for anything else never wait for them.

A run of several rank files is analysed through the map-reduce path (:func:`.results.analyse_ranks`,
docs/scale.md): the server then holds its summaries, and a view that needs a rank's events loads
that rank alone from the cache (:mod:`.ranks`). An allocator snapshot (kind ``snapshot``) is read
into its own results (:mod:`.snapshots`) by :meth:`RunStore.snapshot`, in the same kind of slot.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import Bundle, rank_results
from stepscope.analysis.timeline import timeline_window
from stepscope.analysis.timeline_event import NoSuchEvent, event_details, search_events
from stepscope.analysis.whatif.by_rank import simulate_by_rank
from stepscope.analysis.whatif.options import check_ranks, refuse_without_device
from stepscope.analysis.whatif.simulate import simulate
from stepscope.errors import StepscopeError, UsageError
from stepscope.model.trace import Trace
from stepscope.report.advice_json import finding_dict
from stepscope.report.whatif_view import whatif_dict
from stepscope.server.discover import RunEntry
from stepscope.server.params import ApiError
from stepscope.server.ranks import LOADED_RANKS, RankModels, shift_details, shift_ids, shift_window
from stepscope.server.results import RunResults, analyse_ranks, analyse_run, dumps
from stepscope.server.snapshots import SnapshotResults, analyse_snapshot
from stepscope.server.steps import own_cost_us, restepped
from stepscope.server.whatif import WhatIfRequest

if TYPE_CHECKING:
    from stepscope.compare.diff import SideData

log = logging.getLogger(__name__)
#: timeline windows kept (each a few hundred kB at most)
WINDOW_CACHE = 128
#: what-if answers kept (a few kB each)
WHATIF_CACHE = 64
#: a run's answers at a request's own ``step_ms`` kept (:mod:`.steps`; a whole run's holds its analyses)
STEP_CACHE = 8


def default_loader(path: Path) -> Trace:
    """``stepscope.load`` with its content-keyed cache (a second serve of the same traces is fast)."""
    from stepscope.ingest import load

    return load(path)


@dataclass
class _Slot:
    """One cached computation: a lock, then either a value or the message of why it failed."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    value: Any = None
    error: ApiError | None = None
    state: str = "pending"  # pending | loading | ready | error


def _fill(slot: _Slot, compute: Callable[[], Any], what: str) -> Any:
    """The slot's value, computing it under the slot's lock the first time (errors are kept too)."""
    if slot.state in ("ready", "error"):
        return _value(slot)
    with slot.lock:
        if slot.state not in ("ready", "error"):
            slot.state = "loading"
            try:
                slot.value = compute()
                slot.state = "ready"
            except StepscopeError as exc:
                slot.error, slot.state = ApiError(422, str(exc)), "error"
            except Exception as exc:  # keep serving; the log has the traceback, the client a message
                log.exception("stepscope serve: %s failed", what)
                slot.error, slot.state = ApiError(500, f"{what} failed: {type(exc).__name__}: {exc}"), "error"
    return _value(slot)


def _value(slot: _Slot) -> Any:
    if slot.error is not None:
        raise slot.error
    return slot.value


class RunStore:
    """The runs of one served directory and every answer computed about them (see the module docstring)."""

    def __init__(self, entries: Sequence[RunEntry], loader: Callable[[Path], Trace] | None = None,
                 map_reduce: bool | None = None, loaded_ranks: int = LOADED_RANKS,
                 step_ms: float | None = None) -> None:
        """``loader`` reads a run whole (default :func:`default_loader`); ``map_reduce``: True analyses
        every run through the map-reduce path, False none, None (default) the runs of several rank
        files when no ``loader`` is given; ``loaded_ranks``: rank models a map-reduce run keeps loaded;
        ``step_ms``: the step timed without the profiler given to every run (``serve --step-ms``)."""
        self.step_ms = step_ms
        self._steps: OrderedDict[tuple[str, float], _Slot] = OrderedDict()
        self._entries = {e.id: e for e in entries}
        self._slots = {e.id: _Slot() for e in entries}
        self._loader = loader or default_loader
        self._map_reduce = (loader is None) if map_reduce is None else map_reduce
        self._auto = map_reduce is None
        self._loaded_ranks = loaded_ranks
        self._diffs: dict[tuple[str, str], _Slot] = {}
        self._windows: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self._whatifs: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self._guard = threading.Lock()
        self._one_at_a_time = threading.Lock()  # parsing forks workers and needs memory: one run at a time
        self._replaying = threading.Lock()  # what-if replays: one at a time, apart from the runs' analysis

    @property
    def entries(self) -> list[RunEntry]:
        return list(self._entries.values())

    def entry(self, run_id: str) -> RunEntry:
        """The run behind an id from the runs list (404 for any other id)."""
        found = self._entries.get(run_id)
        if found is None:
            raise ApiError(404, "no such run: ids come from /api/v1/runs")
        return found

    def listing(self) -> list[dict[str, Any]]:
        """The runs list: id, label, kind, state, when it was recorded (``recorded_ns``, Unix ns, 0 unknown;
        ``recorded_from``: discover.recorded_at), and headline numbers once analysed."""
        out = []
        for e in self._entries.values():
            slot = self._slots[e.id]
            item: dict[str, Any] = {"id": e.id, "label": e.label, "kind": e.kind, "state": slot.state,
                                    "recorded_ns": e.recorded_ns, "recorded_from": e.recorded_from}
            if slot.state == "ready":
                item.update(slot.value.summary)
            elif slot.error is not None:
                item["error"] = slot.error.message
            out.append(item)
        return out

    def get(self, run_id: str, step_ms: float | None = None) -> RunResults:
        """The run's precomputed results, analysing it first if no request has yet; with a ``step_ms``
        other than the serve-level one, its answers at that step (:meth:`_at_step`)."""
        if step_ms is not None and step_ms != self.step_ms:
            return self._at_step(run_id, step_ms)
        entry = self.entry(run_id)
        if entry.kind == "snapshot":
            raise ApiError(404, "this run is an allocator snapshot: its answers are under /api/v1/runs/{id}/snapshot")

        def compute() -> RunResults:
            with self._one_at_a_time:
                if self._map_reduce and (not self._auto or _rank_files(entry.path) > 1):
                    try:
                        return analyse_ranks(entry, self._loaded_ranks, self.step_ms)
                    except StepscopeError as exc:  # e.g. two rank files claiming one rank
                        if not self._auto:
                            raise
                        log.info("stepscope serve: %s analysed whole, not by map-reduce: %s", entry.label, exc)
                return analyse_run(entry, self._loader, self.step_ms)

        result: RunResults = _fill(self._slots[run_id], compute, f"analysing {entry.label}")
        return result

    def _at_step(self, run_id: str, step_ms: float) -> RunResults:
        """The run's answers at a request's own step (:func:`.steps.restepped`), made once per (run,
        step_ms) from the run's results; the last :data:`STEP_CACHE` kept."""
        base = self.get(run_id)
        with self._guard:
            slot = self._steps.setdefault((run_id, step_ms), _Slot())
            self._steps.move_to_end((run_id, step_ms))
            while len(self._steps) > STEP_CACHE:
                self._steps.popitem(last=False)

        def compute() -> RunResults:
            with self._one_at_a_time:
                return restepped(base, step_ms)

        result: RunResults = _fill(slot, compute, f"analysing {base.entry.label} at a {step_ms:g} ms step")
        return result

    def snapshot(self, run_id: str) -> SnapshotResults:
        """The allocator snapshot's summary and columns, read first if no request has yet."""
        entry = self.entry(run_id)
        if entry.kind != "snapshot":
            raise ApiError(404, "this run is a trace, not an allocator snapshot")

        def compute() -> SnapshotResults:
            with self._one_at_a_time:
                return analyse_snapshot(entry)

        result: SnapshotResults = _fill(self._slots[run_id], compute, f"reading {entry.label}")
        return result

    def preload(self) -> None:
        """Analyse every run in turn (the server's background thread); failures stay in their slots."""
        for run_id, entry in list(self._entries.items()):
            try:
                self.snapshot(run_id) if entry.kind == "snapshot" else self.get(run_id)
            except ApiError:
                continue

    def diff(self, base: str, new: str) -> bytes:
        """The diff document (docs/json.md) of two runs, computed once per (base, new) pair."""
        b, n = self.get(base), self.get(new)
        with self._guard:
            slot = self._diffs.setdefault((base, new), _Slot())
        return bytes(_fill(slot, lambda: _diff_bytes(b, n), f"diff {b.entry.label} → {n.entry.label}"))

    def window(self, run_id: str, rank: int, start_ns: int, end_ns: int, max_items: int) -> bytes:
        """One timeline window of a rank (LRU-cached)."""
        def compute(res: RunResults) -> bytes:
            try:
                view = res.models.view(rank)
                with view.memo.active():
                    window = timeline_window(view.trace, rank, start_ns, end_ns, max_items=max_items).to_dict()
                return dumps(shift_window(window, view.row_offset, view.track_offset))
            except StepscopeError as exc:
                raise ApiError(422, str(exc)) from None

        return self._window_cached(run_id, (run_id, rank, start_ns, end_ns, max_items), compute)

    def event(self, run_id: str, rank: int, row: int) -> bytes:
        """One event's details (clicked on the timeline), LRU-cached with the windows."""
        def compute(res: RunResults) -> bytes:
            view = res.models.view(rank)
            try:
                with view.memo.active():
                    details = event_details(view.trace, rank, row - view.row_offset)
            except NoSuchEvent:
                raise ApiError(404, f"row {row} is not an event on rank {rank}'s timeline") from None
            return dumps(shift_details(details, view.row_offset, view.track_offset))

        return self._window_cached(run_id, ("event", run_id, rank, row), compute)

    def search(self, run_id: str, rank: int, text: str, page: tuple[int | None, int | None], limit: int) -> bytes:
        """The rank's events whose name contains ``text``, one page (after_ns, before_ns) (LRU-cached)."""
        def compute(res: RunResults) -> bytes:
            view = res.models.view(rank)
            try:
                with view.memo.active():
                    found = search_events(view.trace, rank, text, after_ns=page[0], before_ns=page[1], limit=limit)
            except StepscopeError as exc:
                raise ApiError(400, str(exc)) from None
            m = found["matches"]
            m["row"], m["track"] = shift_ids(m["row"], view.row_offset), shift_ids(m["track"], view.track_offset)
            return dumps(found)

        return self._window_cached(run_id, ("search", run_id, rank, text, page, limit), compute)

    def _window_cached(self, run_id: str, key: tuple[Any, ...], compute: Callable[[RunResults], bytes]) -> bytes:
        """A timeline answer of the run: from the windows' LRU, else computed and kept there."""
        res = self.get(run_id)
        hit = self._cached(self._windows, key)
        if hit is not None:
            return hit
        return self._keep(self._windows, key, compute(res), WINDOW_CACHE)

    def whatif(self, run_id: str, request: WhatIfRequest, step_ms: float | None = None) -> bytes:
        """The run replayed with the request's changes (``stepscope whatif --json``), at ``step_ms`` as
        :meth:`get` takes it; LRU-cached by the run, the step and the changes."""
        res = self.get(run_id, step_ms)
        key = (run_id, self.step_ms if step_ms is None else step_ms, request.key)
        with self._replaying:
            hit = self._cached(self._whatifs, key)
            if hit is not None:
                return hit
            data = _whatif_bytes(res, request)
            return self._keep(self._whatifs, key, data, WHATIF_CACHE)

    def _cached(self, lru: OrderedDict[tuple[Any, ...], bytes], key: tuple[Any, ...]) -> bytes | None:
        with self._guard:
            hit = lru.get(key)
            if hit is not None:
                lru.move_to_end(key)
            return hit

    def _keep(self, lru: OrderedDict[tuple[Any, ...], bytes], key: tuple[Any, ...], data: bytes, cap: int) -> bytes:
        with self._guard:
            lru[key] = data
            while len(lru) > cap:
                lru.popitem(last=False)
        return data


def _rank_files(path: Path) -> int:
    """How many rank files the run has (0 when it cannot tell: the whole-model load says why)."""
    from stepscope.ingest.layout import resolve

    try:
        return len(resolve(path, None).files) if path.is_dir() else 1
    except (StepscopeError, OSError):
        return 0


def _whatif_bytes(res: RunResults, request: WhatIfRequest) -> bytes:
    """Replay every rank of the run together (outside the bundle's memo: the replayed traces are not
    kept). The job replay ties the ranks at their collectives; a map-reduce run gives it one rank's
    model at a time (:mod:`stepscope.analysis.whatif.by_rank`: each rank's step graph and changed
    durations kept, its events let go), never the whole model."""
    try:
        check_ranks(tuple(request.options.get("fix_rank", ())), list(res.ranks))
        refuse_without_device(request.changes, not res.summary.get("cpu_only", False))
        if request.own_cost:  # "unprofiled": true: the cost the run measured, else the calibrated one
            request = request.at_cost(own_cost_us(res))
        if res.bundle is not None:
            w = simulate(res.bundle.trace, request.changes)
        else:
            w = simulate_by_rank(res.ranks, functools.partial(_open_rank, res.models), request.changes)
        doc = whatif_dict(w, res.entry.label)
    except StepscopeError as exc:
        raise ApiError(422, str(exc)) from None
    except NotApplicable as exc:
        raise ApiError(422, f"no what-if for this run: {exc.reason}") from None
    doc["options"] = request.options
    return dumps(doc)


@contextlib.contextmanager
def _open_rank(models: RankModels, rank: int) -> Iterator[Trace]:
    """The rank's model with its memo active (not kept in the loaded ranks: a replay passes every rank)."""
    view = models.view(rank, keep=False)
    with view.memo.active():
        yield view.trace


def _diff_bytes(base: RunResults, new: RunResults) -> bytes:
    from stepscope.compare.diff import compare, compare_sides
    from stepscope.compare.document import to_json

    if base.bundle is not None and new.bundle is not None:
        result = compare(base.bundle, new.bundle)
    else:
        result = compare_sides(_side(base), _side(new))
    doc = to_json(result)
    doc["base"]["label"], doc["new"]["label"] = base.entry.label, new.entry.label
    return dumps(doc)


def _side(res: RunResults) -> SideData:
    """The run's side of a diff (its lowest rank): from the whole model's bundle, or, for a
    map-reduce run, from that rank loaded alone and analysed in a memo with the job's facts, with
    the findings of the run's advice about that rank and the job."""
    from stepscope.compare.diff import side_data

    if res.bundle is not None:
        return side_data(res.bundle)
    if not res.ranks or res.advice is None:
        raise UsageError(f"{res.entry.label}: the trace has no ranks to compare")
    rank = min(res.ranks)
    view = res.models.view(rank, keep=False)
    with view.memo.active():
        bundle = Bundle(view.trace, {rank: rank_results(view.trace, rank)}, memo=view.memo)
    found = [finding_dict(f) for f in res.advice.findings if f.rank is None or f.rank == rank]
    return replace(side_data(bundle, rank, with_findings=False), findings=found)
