"""Templates rendered as prose: no Python value (``None``, ``['a', 'b']``) and no empty placeholder.

:func:`fill` formats a ``str.format`` template over a mapping of values, with three rules:

* **Values read as prose** (:func:`prose`): a list is its items joined by ", " (by "; " when the
  items are themselves lists), a shape (the JSON text of one, as Kineto writes ``Input Dims``)
  reads ``1×141×512``, a bool "yes" / "no". A value with no words in it — None, an
  empty string or list, NaN, a mapping — has *no value*.
* **Optional parts**: the text between ``⟨`` and ``⟩`` is kept only when every field written directly
  in it has a value (parts nest: ``⟨ (here {call}⟨ under {op}⟩)⟩`` keeps "(here cudaMemcpy)" when
  only ``op`` is missing, and drops it all when ``call`` is).
* A field outside any optional part that has no value renders as ``?``; a value that does not fit
  its format spec (``{n:.1f}`` given a word) renders as its prose. Never raises.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

OPEN, CLOSE = "⟨", "⟩"
MISSING = "?"
_SPACES = re.compile(r" {2,}")
_FORMATTER = string.Formatter()


def _shape(value: Any) -> str | None:
    """Parsed ``Input Dims``: ``[1, 141, 512]`` → ``1×141×512``, ``[[1, 2], []]`` → ``(1×2, scalar)``;
    None when not a shape."""
    if not isinstance(value, list):
        return None
    if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return "×".join(str(v) for v in value)
    if value and all(isinstance(v, list) for v in value):
        parts = [_shape(v) if v else "scalar" for v in value]
        words = [p for p in parts if p is not None]
        return "(" + ", ".join(words) + ")" if len(words) == len(parts) else None
    return None


def _json_list(text: str) -> Any:
    if not (text.startswith("[") and text.endswith("]")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def prose(value: Any) -> str | None:
    """The words for a value; None when it has none (see the module docstring)."""
    if value is None or isinstance(value, Mapping):
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        parsed = _json_list(value.strip())
        if parsed is not None:
            return _shape(parsed) or prose(parsed)
        return value if value.strip() and value != "None" else None
    if isinstance(value, Sequence):
        words = [w for w in (prose(v) for v in value) if w]
        nested = any(isinstance(v, (list, tuple)) or (isinstance(v, str) and v.startswith("[")) for v in value)
        return ("; " if nested else ", ").join(words) or None
    return str(value)


def _field(values: Mapping[str, Any], name: str) -> Any:
    return values.get(name.split(".")[0].split("[")[0])


def _render_field(value: Any, spec: str) -> str:
    if value is None or isinstance(value, (str, list, tuple, bool, Mapping)) or (
            isinstance(value, float) and not math.isfinite(value)):
        return prose(value) or MISSING
    if not spec and isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))  # "10 sync calls", not "10.0 sync calls"
    try:
        return format(value, spec)
    except (ValueError, TypeError):
        return prose(value) or MISSING


def _render_flat(template: str, values: Mapping[str, Any]) -> str:
    """A template without optional parts."""
    out = []
    for literal, name, spec, _conv in _FORMATTER.parse(template):
        out.append(literal)
        if name is not None:
            out.append(_render_field(_field(values, name), spec or ""))
    return "".join(out)


def has_value(value: Any) -> bool:
    """A number (finite), or anything :func:`prose` has words for."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value)
    return prose(value) is not None


def _has_values(template: str, values: Mapping[str, Any]) -> bool:
    """Whether every field written directly in ``template`` (not in a nested part) has a value."""
    names = [n for _lit, n, _s, _c in _FORMATTER.parse(_strip_parts(template)) if n is not None]
    return all(has_value(_field(values, n)) for n in names)


def _parts(template: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level ``⟨…⟩`` part, end exclusive; an unmatched marker is literal."""
    spans, depth, start = [], 0, 0
    for i, ch in enumerate(template):
        if ch == OPEN:
            if depth == 0:
                start = i
            depth += 1
        elif ch == CLOSE and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


def _strip_parts(template: str) -> str:
    pos, out = 0, []
    for a, b in _parts(template):
        out.append(template[pos:a])
        pos = b
    out.append(template[pos:])
    return "".join(out)


def _render(template: str, values: Mapping[str, Any]) -> str:
    pos, out = 0, []
    for a, b in _parts(template):
        out.append(_render_flat(template[pos:a], values))
        inner = template[a + 1:b - 1]
        if _has_values(inner, values):
            out.append(_render(inner, values))
        pos = b
    out.append(_render_flat(template[pos:], values))
    return "".join(out)


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Render ``template`` over ``values`` as prose (see the module docstring); never raises."""
    try:
        text = _render(template, values)
    except (ValueError, IndexError, KeyError):  # a malformed template: show it rather than fail
        text = template
    return _SPACES.sub(" ", text).strip()


def findings_order_text(gains: Sequence[float]) -> str:
    """How a list of findings is ordered (advisor.ranking): by gain, except that the findings that
    shorten what bounds the step come first — said so where that puts a smaller gain above a larger."""
    by_gain = all(a >= b for a, b in zip(gains, gains[1:]))
    return "largest estimated gain first" if by_gain else "what shortens the bound first, then by gain"
