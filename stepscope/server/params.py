"""Strict parsing of what a request may carry: run ids, ranks, nanosecond bounds, item counts.

Every route reads its query through :func:`query` with the names it accepts, so an unknown,
repeated, over-long or malformed parameter is a 400 with a message, never a guess. Nothing here
touches the file system: a run id is only ever a key into the runs list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from stepscope.ingest.step_records import MAX_GIVEN_STEP_MS, given_step_problem

#: the most query parameters a request may carry, and the longest value
MAX_PARAMS = 8
MAX_VALUE_CHARS = 64
#: run ids are 12 lowercase hex digits (see :func:`stepscope.server.discover.run_id`)
RUN_ID = re.compile(r"^[0-9a-f]{12}$")
#: timeline bounds: trace times are int64 ns; anything outside ±2⁶² is nonsense
NS_LIMIT = 1 << 62
MAX_ITEMS_LIMIT = 20_000
DEFAULT_MAX_ITEMS = 4000
_INT = re.compile(r"^-?\d{1,19}$")
#: a decimal number of milliseconds (``33``, ``33.05``, ``.5``, ``3.3e1``): no sign, no ``nan`` / ``inf``
_MS = re.compile(r"^(?:\d{1,12}(?:\.\d{0,12})?|\.\d{1,12})(?:[eE][+-]?\d{1,3})?$")


class ApiError(Exception):
    """An expected failure of a request: answered as JSON ``{"error": message, "status": status}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def query(items: Iterable[tuple[str, str]], allowed: Iterable[str]) -> dict[str, str]:
    """The query as a dict, after checking names, count, repeats and value length (400 otherwise)."""
    pairs = list(items)
    names = set(allowed)
    if len(pairs) > MAX_PARAMS:
        raise ApiError(400, f"too many query parameters (at most {MAX_PARAMS})")
    out: dict[str, str] = {}
    for key, value in pairs:
        if key not in names:
            raise ApiError(400, f"unknown query parameter {key[:32]!r} (this route takes: {', '.join(sorted(names))})")
        if key in out:
            raise ApiError(400, f"query parameter {key!r} given twice")
        if len(value) > MAX_VALUE_CHARS:
            raise ApiError(400, f"query parameter {key!r} is too long")
        out[key] = value
    return out


def run_id(value: str | None, what: str = "run") -> str:
    """A syntactically valid run id (existence is checked by the store: 404)."""
    if value is None or value == "":
        raise ApiError(400, f"missing {what} id")
    if not RUN_ID.match(value):
        raise ApiError(404, f"no such {what}: ids come from /api/v1/runs")
    return value


def integer(q: Mapping[str, str], name: str, *, lo: int, hi: int, default: int | None = None) -> int | None:
    """An optional integer parameter in [lo, hi]; absent → ``default``."""
    raw = q.get(name)
    if raw is None or raw == "":
        return default
    if not _INT.match(raw):
        raise ApiError(400, f"{name} must be an integer, got {raw[:32]!r}")
    value = int(raw)
    if not lo <= value <= hi:
        raise ApiError(400, f"{name} must be between {lo} and {hi}")
    return value


def step_ms(q: Mapping[str, str]) -> float | None:
    """The optional ``step_ms``: the step timed without the profiler (``--step-ms``), a finite number of
    milliseconds above 0 (:func:`~stepscope.ingest.step_records.given_step_problem`); absent → None."""
    raw = q.get("step_ms")
    if raw is None or raw == "":
        return None
    value = float(raw) if _MS.match(raw) else None
    if value is None or given_step_problem(value) is not None:
        raise ApiError(400, f"step_ms must be a number of milliseconds above 0 and at most {MAX_GIVEN_STEP_MS:g}, "
                       f"the step timed without the profiler (got {raw[:32]!r})")
    return value


def rank(q: Mapping[str, str], ranks: Iterable[int], *, required: bool = False) -> int | None:
    """The ``rank`` parameter, which must be one of the run's ranks (404 otherwise)."""
    value = integer(q, "rank", lo=-(1 << 31), hi=(1 << 31) - 1)
    have = list(ranks)
    if value is None:
        if required and not have:
            raise ApiError(404, "this run has no ranks")
        return have[0] if required else None
    if value not in have:
        raise ApiError(404, f"no rank {value} in this run (have {', '.join(map(str, have[:16]))})")
    return value


def window(q: Mapping[str, str]) -> tuple[int | None, int | None, int]:
    """``start_ns``, ``end_ns`` (each optional) and ``max_items`` of a timeline request."""
    start = integer(q, "start_ns", lo=-NS_LIMIT, hi=NS_LIMIT)
    end = integer(q, "end_ns", lo=-NS_LIMIT, hi=NS_LIMIT)
    if start is not None and end is not None and end <= start:
        raise ApiError(400, "end_ns must be greater than start_ns")
    items = integer(q, "max_items", lo=1, hi=MAX_ITEMS_LIMIT)
    return start, end, DEFAULT_MAX_ITEMS if items is None else items


#: events listed per search answer (the client pages on with ``after_ns``)
MAX_SEARCH_LIMIT = 10_000
DEFAULT_SEARCH_LIMIT = 2000


def search(q: Mapping[str, str]) -> tuple[str, int | None, int | None, int]:
    """``q`` (the text to find in names, non-empty), ``after_ns`` or ``before_ns`` (not both) and
    ``limit`` of a search request."""
    text = q.get("q", "")
    if not text.strip():
        raise ApiError(400, "missing q: the text to find in event names")
    after = integer(q, "after_ns", lo=-NS_LIMIT, hi=NS_LIMIT)
    before = integer(q, "before_ns", lo=-NS_LIMIT, hi=NS_LIMIT)
    if after is not None and before is not None:
        raise ApiError(400, "give after_ns or before_ns, not both")
    limit = integer(q, "limit", lo=1, hi=MAX_SEARCH_LIMIT, default=DEFAULT_SEARCH_LIMIT)
    return text, after, before, DEFAULT_SEARCH_LIMIT if limit is None else limit
