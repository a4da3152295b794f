"""Compare two runs (SPEC §7): ``stepscope diff BASE NEW`` and its library API.

::

    path ──prepare──▶ Bundle ──side_data──▶ SideData ─┐
    path ──prepare──▶ Bundle ──side_data──▶ SideData ─┴─compare_sides──▶ DiffResult
                                                                          │
                      document.to_json ◀──────────────────────────────────┘──▶ terminal / tabular / gate

Modules: :mod:`.align` (match names through strings, name maps), :mod:`.select` (steps per side),
:mod:`.sources` (one run's tables, from the views), :mod:`.overall` (step, breakdown, MSA split),
:mod:`.tables` (aligned per-name diffs), :mod:`.findings` (advisor findings resolved / new / still),
:mod:`.narrative`, :mod:`.gate`, :mod:`.diff` (the entry points), :mod:`.prepare` (paths → sides,
two processes for large inputs), :mod:`.document` (JSON), :mod:`.terminal`, :mod:`.tabular`.
"""

from __future__ import annotations

from stepscope.compare.align import NameMap, builtin_name_map, load_name_map
from stepscope.compare.diff import DiffResult, SideData, compare, compare_sides, side_data
from stepscope.compare.document import to_json
from stepscope.compare.prepare import SideSpec, diff_paths

__all__ = [
    "DiffResult",
    "NameMap",
    "SideData",
    "SideSpec",
    "builtin_name_map",
    "compare",
    "compare_sides",
    "diff_paths",
    "load_name_map",
    "side_data",
    "to_json",
]
