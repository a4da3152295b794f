"""A CUDA caching-allocator snapshot (``torch.cuda.memory._dump_snapshot``) as columns.

``ingest/snapshot.py`` reads the pickle (safely) into this; ``analysis/allocator.py`` summarises it.
Stacks are string ids into ``strings``: ``stack`` is the whole Python stack (innermost first, one
``file:line function`` per frame, ``;``-separated), ``site`` its first frame outside site-packages
(the user's line that allocated).

=========  ===================================================================================
segments   device, address, total_size, allocated_size, active_size, requested_size, stream,
           is_large (``segment_type == "large"``), blocks (count)
blocks     segment (row), address, size, requested_size, state (``BLOCK_STATES`` index), stack
trace      device, action (``ACTIONS`` index, -1 other), addr, size, time_us, stack, site
=========  ===================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.strings import StringPool

#: the allocator's trace actions, by code
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom")
#: a block's states, by code
BLOCK_STATES = ("inactive", "active_allocated", "active_pending_free")

Columns = dict[str, npt.NDArray[Any]]


@dataclass(frozen=True)
class AllocatorSnapshot:
    """One snapshot's segments, blocks and allocation history (see the module docstring)."""

    source: str
    segments: Columns
    blocks: Columns
    trace: Columns
    strings: StringPool
    settings: dict[str, Any] = field(default_factory=dict)

    def action_mask(self, action: str) -> npt.NDArray[np.bool_]:
        return np.asarray(self.trace["action"] == ACTIONS.index(action))
