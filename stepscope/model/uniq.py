"""Sorted distinct values of a column, by sorting.

numpy 2.3+ answers a plain ``np.unique`` through a hash table that is orders of magnitude slower than
sorting on high-cardinality integer columns (1.6 M int64 keys: 1.4 s against 18 ms with numpy
2.4), so the model, the analyses and the reports take distinct values through :func:`unique`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def unique(values: npt.ArrayLike) -> npt.NDArray[Any]:
    """The sorted distinct values of ``values`` (flattened), as ``np.unique(values)`` returns them."""
    arr = np.asarray(values).ravel()
    if arr.dtype.kind not in "iub" or len(arr) < 2:
        return np.unique(arr)  # floats (NaN handling), strings, objects: numpy's own rules
    s = np.sort(arr)
    keep = np.empty(len(s), bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
