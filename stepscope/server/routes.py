"""The JSON API (``/api/v1/``): every handler checks its query, looks a precomputed answer up, returns it.

=============================================  ================================================
``GET /api/v1/health``                         ``{"ok": true, "runs": n}``
``GET /api/v1/runs``                           ``{"runs": [{id, label, kind, state, ...}]}``
``GET /api/v1/runs/{id}[?rank=&step_ms=]``     the run's §12 document (one rank with ``rank``; at the
                                               step timed without the profiler ``step_ms``: :mod:`.steps`)
``GET /api/v1/runs/{id}/findings[?step_ms=]``  ``{"findings": [...], "verdicts": [...]}``
``GET /api/v1/runs/{id}/info``                 per rank: time extent and step windows (trace ns)
``GET /api/v1/runs/{id}/memory?rank=``         the rank's memory curves
``GET /api/v1/runs/{id}/timeline?rank=&...``   one timeline window (``start_ns``, ``end_ns``,
                                               ``max_items``; the rank's extent by default)
``GET /api/v1/runs/{id}/event?rank=&row=``      one event's details (args, shapes, stack, launch,
                                               its kernels: :mod:`stepscope.analysis.timeline_event`)
``GET /api/v1/runs/{id}/search?rank=&q=&...``  the rank's events whose name contains ``q``
                                               (``after_ns`` / ``before_ns``, ``limit``: a page)
``GET /api/v1/runs/{id}/snapshot``            an allocator snapshot's summary (``stepscope memory
                                               --json``; :mod:`.snapshots`)
``GET /api/v1/runs/{id}/snapshot/curve?...``   a window of its live-bytes curve (``device``,
                                               ``start_ms``, ``end_ms``, ``points`` <= 5000)
``GET /api/v1/runs/{id}/snapshot/allocations`` the allocations live at the peak, largest first,
                                               with stacks (``device``, ``offset``, ``limit``)
``GET /api/v1/diff?base=&new=``                the diff document of two runs (docs/json.md)
``POST /api/v1/runs/{id}/whatif[?step_ms=]``   the run replayed with the changes of the JSON body
                                               (:mod:`.whatif`): ``stepscope whatif --json``
=============================================  ================================================

Handlers are plain functions, so Starlette runs them in its thread pool: a run being analysed
blocks only the requests that need it. The what-if handler reads its body on the event loop, then
replays in the same thread pool. Ids are opaque keys from the runs list; nothing a client
sends is ever used as a path.
"""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from stepscope.server import params, snapshots
from stepscope.server.params import ApiError
from stepscope.server.results import RunResults
from stepscope.server.store import RunStore
from stepscope.server.whatif import parse_whatif


def json_bytes(body: bytes, status: int = 200) -> Response:
    """A JSON response from already-encoded bytes (the cached answers)."""
    return Response(content=body, status_code=status, media_type="application/json")


def json_error(status: int, message: str) -> Response:
    """The one error shape: ``{"error": message, "status": status}``."""
    return json_bytes(json.dumps({"error": message, "status": status}).encode(), status)


def _store(request: Request) -> RunStore:
    store: RunStore = request.app.state.store
    return store


def _run(request: Request) -> tuple[RunStore, str]:
    return _store(request), params.run_id(request.path_params.get("run_id"))


async def health(request: Request) -> Response:
    """On the event loop, so that it answers while every worker thread is busy."""
    params.query(request.query_params.multi_items(), ())
    return json_bytes(json.dumps({"ok": True, "runs": len(_store(request).entries)}).encode())


def runs(request: Request) -> Response:
    params.query(request.query_params.multi_items(), ())
    return json_bytes(json.dumps({"runs": _store(request).listing()}).encode())


def _ready(request: Request, allowed: tuple[str, ...]) -> tuple[RunResults, dict[str, str]]:
    """The run's results (at the query's ``step_ms`` where the route takes one) and the checked query."""
    q = params.query(request.query_params.multi_items(), allowed)
    store, run_id = _run(request)
    return store.get(run_id, params.step_ms(q)), q


def document(request: Request) -> Response:
    res, q = _ready(request, ("rank", "step_ms"))
    rank = params.rank(q, res.ranks)
    return json_bytes(res.doc if rank is None else res.rank_doc(rank))


def findings(request: Request) -> Response:
    res, _ = _ready(request, ("step_ms",))
    return json_bytes(res.findings)


def info(request: Request) -> Response:
    res, _ = _ready(request, ())
    return json_bytes(res.info)


def memory(request: Request) -> Response:
    res, q = _ready(request, ("rank",))
    rank = params.rank(q, res.ranks, required=True)
    if rank is None:
        raise ApiError(404, "this run has no ranks")
    return json_bytes(res.memory[rank])


def timeline(request: Request) -> Response:
    res, q = _ready(request, ("rank", "start_ns", "end_ns", "max_items"))
    rank = params.rank(q, res.ranks, required=True)
    if rank is None:
        raise ApiError(404, "this run has no ranks")
    start, end, items = params.window(q)
    first, last = res.extents[rank]
    start = first if start is None else start
    end = last if end is None else end
    if end <= start:
        raise ApiError(400, "end_ns must be greater than start_ns")
    store, run_id = _run(request)
    return json_bytes(store.window(run_id, rank, start, end, items))


def event(request: Request) -> Response:
    res, q = _ready(request, ("rank", "row"))
    rank = params.rank(q, res.ranks, required=True)
    row = params.integer(q, "row", lo=0, hi=(1 << 31) - 1)
    if rank is None or row is None:
        raise ApiError(400 if rank is not None else 404, "missing row" if rank is not None else "this run has no ranks")
    store, run_id = _run(request)
    return json_bytes(store.event(run_id, rank, row))


def search(request: Request) -> Response:
    res, q = _ready(request, ("rank", "q", "after_ns", "before_ns", "limit"))
    rank = params.rank(q, res.ranks, required=True)
    if rank is None:
        raise ApiError(404, "this run has no ranks")
    text, after, before, limit = params.search(q)
    store, run_id = _run(request)
    return json_bytes(store.search(run_id, rank, text, (after, before), limit))


def snapshot(request: Request) -> Response:
    params.query(request.query_params.multi_items(), ())
    store, run_id = _run(request)
    return json_bytes(store.snapshot(run_id).doc)


def snapshot_curve(request: Request) -> Response:
    q = params.query(request.query_params.multi_items(), ("device", "start_ms", "end_ms", "points"))
    store, run_id = _run(request)
    points = params.integer(q, "points", lo=2, hi=snapshots.MAX_POINTS, default=snapshots.CURVE_POINTS)
    return json_bytes(snapshots.curve(store.snapshot(run_id), q, points or snapshots.CURVE_POINTS))


def snapshot_allocations(request: Request) -> Response:
    q = params.query(request.query_params.multi_items(), ("device", "offset", "limit"))
    store, run_id = _run(request)
    res = store.snapshot(run_id)
    offset = params.integer(q, "offset", lo=0, hi=(1 << 31) - 1, default=0) or 0
    limit = params.integer(q, "limit", lo=1, hi=snapshots.MAX_PAGE, default=50) or 50
    return json_bytes(snapshots.allocations(res, snapshots.device(res, q), offset, limit))


def diff(request: Request) -> Response:
    q = params.query(request.query_params.multi_items(), ("base", "new"))
    base, new = params.run_id(q.get("base"), "base run"), params.run_id(q.get("new"), "new run")
    return json_bytes(_store(request).diff(base, new))


async def whatif(request: Request) -> Response:
    step_ms = params.step_ms(params.query(request.query_params.multi_items(), ("step_ms",)))
    store, run_id = _run(request)
    store.entry(run_id)  # 404 before reading the body
    changes = parse_whatif(await request.body())
    return json_bytes(await run_in_threadpool(store.whatif, run_id, changes, step_ms))


API_ROUTES = [
    Route("/api/v1/health", health, methods=["GET"]),
    Route("/api/v1/runs", runs, methods=["GET"]),
    Route("/api/v1/runs/{run_id}", document, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/findings", findings, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/info", info, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/memory", memory, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/timeline", timeline, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/event", event, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/search", search, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/snapshot", snapshot, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/snapshot/curve", snapshot_curve, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/snapshot/allocations", snapshot_allocations, methods=["GET"]),
    Route("/api/v1/diff", diff, methods=["GET"]),
    Route("/api/v1/runs/{run_id}/whatif", whatif, methods=["POST"]),
]
