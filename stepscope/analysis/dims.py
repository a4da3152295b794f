"""Tensor sizes from a trace's ``Input Dims`` texts, read as the untrusted numbers they are: a text
that is not JSON, nests deeper than the parser goes, or holds a dimension that is not a
non-negative integer gives no size; a product past :data:`MAX_NUMEL` is capped there (it must fit
the int64 columns it is mapped into: a hand-edited ``[[1180591620717411303424]]`` crashed the
communication sizes)."""

from __future__ import annotations

import json
import math

#: the largest element count a size is taken as (fits int64 with room for sums)
MAX_NUMEL = 1 << 56


def tensor_dims(text: str) -> list[list[int]] | None:
    """The ``Input Dims`` text as one dimension list per input (``[]`` for a non-tensor input);
    None when it is not such a list."""
    try:
        dims = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(dims, list):
        return None
    return [d if isinstance(d, list) and all(type(x) is int and x >= 0 for x in d) else [] for d in dims]


def numel(shape: list[int]) -> int:
    """Elements of a tensor of this shape, capped at :data:`MAX_NUMEL`; -1 for a non-tensor (``[]``)."""
    return min(math.prod(shape), MAX_NUMEL) if shape else -1
