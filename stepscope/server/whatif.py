"""The body of ``POST /api/v1/runs/{id}/whatif``: the changes to replay, checked strictly.

The body is one JSON object whose fields are ``stepscope whatif``'s options (docs/serve.md)::

    {"workers": 8, "drop_syncs": "item", "pin_copies": true, "host_overhead": 0.5,
     "host_in": ["^Optimizer.step=0.5"], "fused_optimizer": true, "scale": ["gemm|conv=0.5"],
     "overlap_comm": true, "fix_rank": [7]}

Each field is optional, but at least one change must be named. A field of the wrong type, an
unknown field, a factor outside [0, 1000], a regex that does not compile or is longer than 200
characters is a 400 with a one-line message naming the field. The transformations are made by the
same :func:`~stepscope.analysis.whatif.options.transforms_of` as the command line's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from stepscope.analysis.whatif.options import (
    MAX_FACTOR,
    MAX_WORKERS,
    REMEDY_FLAGS,
    batch_of,
    pair,
    regex_of,
    transforms_of,
    workers_of,
)
from stepscope.analysis.whatif.remedies import REMEDIES
from stepscope.analysis.whatif.transforms import Transform
from stepscope.analysis.whatif.unprofiled import EVENT_COST_NS
from stepscope.errors import UsageError
from stepscope.server.params import ApiError

#: the largest body accepted (the Guard refuses a longer Content-Length before it is read)
MAX_BODY_BYTES = 8192
MAX_PATTERN_CHARS = 200
MAX_PAIRS = 8
T = TypeVar("T")
FIELDS = ("workers", "drop_syncs", "pin_copies", "host_overhead", "host_in", "fused_optimizer", "no_compile",
          "batch_copies", "amp", "bf16", "fill_sms", "pad_gemms", "fuse_elementwise", "fused_attention",
          "set_to_none", "no_launch_blocking", "move_host_work", "no_algo_search", "move_loop_code", "remedy", "scale",
          "overlap_comm", "fix_rank", "batch", "unprofiled")


@dataclass(frozen=True)
class WhatIfRequest:
    """The checked options (as given, for the answer and the cache key) and their transformations."""

    options: dict[str, Any]
    changes: tuple[Transform, ...]

    @property
    def key(self) -> str:
        return json.dumps(self.options, sort_keys=True, separators=(",", ":"))

    @property
    def own_cost(self) -> bool:
        """``"unprofiled": true``: the profiler's cost the run measured is removed (:meth:`at_cost` sets it)."""
        return self.options.get("unprofiled") is True

    def at_cost(self, unprofiled_us: float) -> WhatIfRequest:
        """The request with ``"unprofiled": true`` made that cost per recorded op (µs)."""
        return replace(self, changes=_changes(self.options, unprofiled_us))


def _refuse_constant(name: str) -> float:
    raise ApiError(400, f"the request body holds {name}: only finite numbers are accepted")


def _object(body: bytes) -> dict[str, Any]:
    if len(body) > MAX_BODY_BYTES:
        raise ApiError(413, f"a what-if request is a JSON object of at most {MAX_BODY_BYTES} bytes")
    try:
        obj = json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"the request body is not JSON: {str(exc)[:120]}") from None
    if not isinstance(obj, dict):
        raise ApiError(400, "the request body must be a JSON object of what-if options")
    unknown = sorted(str(k) for k in obj if k not in FIELDS)
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0][:32]!r} (a what-if takes: {', '.join(FIELDS)})")
    return {k: v for k, v in obj.items() if v is not None}


def _workers(value: Any) -> int | str:
    """N, or 'FROM:TO' where the trace's loader already has workers (``--workers 2:4``)."""
    if isinstance(value, str) and ":" in value and len(value) <= 16:
        _usage(lambda: workers_of(value, "workers"))
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise ApiError(400, f"workers must be an integer from 1 to {MAX_WORKERS}, or 'FROM:TO' (the workers the "
                       "trace ran with and after, e.g. '2:4')")
    return value


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ApiError(400, f"{name} must be true or false")
    return value


def _factor(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_FACTOR:
        raise ApiError(400, f"{name} must be a number from 0 to {MAX_FACTOR:g}")
    return float(value)


def _pattern(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_PATTERN_CHARS:
        raise ApiError(400, f"{name} must be a regular expression of 1 to {MAX_PATTERN_CHARS} characters")
    return _usage(lambda: regex_of(value, name))


def _pairs(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_PAIRS or not all(isinstance(v, str) for v in value):
        raise ApiError(400, f"{name} must be a list of at most {MAX_PAIRS} 'REGEX=FACTOR' strings")
    for text in value:
        if len(text) > MAX_PATTERN_CHARS + 24:
            raise ApiError(400, f"{name}: {text[:32]!r}… is too long (a regex of at most {MAX_PATTERN_CHARS} "
                           "characters, '=', a factor)")
        try:
            pair(text, name)
        except UsageError as exc:
            raise ApiError(400, exc.message) from None
    return list(value)


def _ranks(value: Any) -> list[int]:
    if not isinstance(value, list) or len(value) > MAX_PAIRS or \
            not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 20 for v in value):
        raise ApiError(400, f"fix_rank must be a list of at most {MAX_PAIRS} rank numbers")
    return list(value)


def _remedies(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v in REMEDIES for v in value):
        raise ApiError(400, f"remedy must be a list of standard remedy names ({', '.join(REMEDIES)})")
    return list(dict.fromkeys(value))


def _unprofiled(value: Any) -> float | bool:
    """µs per recorded op, or true: the cost the run measured (``whatif --unprofiled`` without a value)."""
    if value is True or value is False:
        return value
    if isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= MAX_FACTOR:
        return float(value)
    raise ApiError(400, f"unprofiled must be true (the cost the run measured, else {EVENT_COST_NS / 1e3:g} µs) or "
                   f"a number of µs per recorded op from 0 to {MAX_FACTOR:g}")


def _batch(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 64:
        raise ApiError(400, "batch must be 'FROM:TO', the batch size now and after (e.g. '32:64')")
    _usage(lambda: batch_of(value, "batch"))
    return value


def _usage(check: Callable[[], T]) -> T:
    """``check()``, its one-line usage error turned into a 400."""
    try:
        return check()
    except UsageError as exc:
        raise ApiError(400, exc.message) from None


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "workers": _workers, "drop_syncs": lambda v: _pattern(v, "drop_syncs"),
    "pin_copies": lambda v: _flag(v, "pin_copies"), "host_overhead": lambda v: _factor(v, "host_overhead"),
    "host_in": lambda v: _pairs(v, "host_in"), "scale": lambda v: _pairs(v, "scale"),
    "fused_optimizer": lambda v: _flag(v, "fused_optimizer"), "no_compile": lambda v: _flag(v, "no_compile"),
    "batch_copies": lambda v: _flag(v, "batch_copies"), "amp": lambda v: _flag(v, "amp"),
    "bf16": lambda v: _flag(v, "bf16"), **{k: partial(_flag, name=k) for k in REMEDY_FLAGS},
    "overlap_comm": lambda v: _flag(v, "overlap_comm"), "fix_rank": _ranks, "batch": _batch,
    "unprofiled": _unprofiled, "remedy": _remedies}


def parse_whatif(body: bytes) -> WhatIfRequest:
    """The checked request (see the module docstring); :class:`ApiError` 400 / 413 on bad input."""
    raw = _object(body)
    opts = {name: _CHECKS[name](value) for name, value in raw.items()}
    opts = {k: v for k, v in opts.items() if v is not False and v != []}
    if not opts:
        raise ApiError(400, f"name at least one change ({', '.join(FIELDS)})")
    return WhatIfRequest(opts, _changes(opts, EVENT_COST_NS / 1e3))


def _changes(opts: dict[str, Any], own_cost_us: float) -> tuple[Transform, ...]:
    """The checked options' transformations; ``"unprofiled": true`` at ``own_cost_us`` µs per op."""
    unprofiled = opts.get("unprofiled")
    return tuple(_usage(lambda: transforms_of(
        opts.get("workers"), opts.get("drop_syncs"), bool(opts.get("pin_copies")), tuple(opts.get("scale", ())),
        opts.get("host_overhead"), tuple(opts.get("host_in", ())), bool(opts.get("overlap_comm")),
        tuple(opts.get("fix_rank", ())), opts.get("batch"), bool(opts.get("fused_optimizer")),
        bool(opts.get("no_compile")), bool(opts.get("batch_copies")),
        own_cost_us if unprofiled is True else unprofiled, bool(opts.get("amp")),
        bool(opts.get("bf16")), (*(k for k in REMEDY_FLAGS if opts.get(k)), *opts.get("remedy", ())))))
