"""What every reader returns for one file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: what a reader repaired and counted instead of failing: (diagnostic name, severity, example, count)
Repair = tuple[str, str, str, int]


@dataclass
class FileBatch:
    """Everything read from one file: columns with global string ids, its JSON metadata, losses."""

    path: str
    size_bytes: int
    parts: list[Any] = field(default_factory=list)  # what ``consume`` made of each chunk
    n_events: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)  # each becomes a diagnostic of the file
    lost_bytes: int = 0
    complete: bool = True
    meta_error: str = ""
    #: steps the reader found on the device, (step, start ns, end ns), for a file without a host
    #: timeline (no ProfilerStep#N to find them by): the Ascend summaries (:mod:`.ascend_csv`)
    device_steps: list[tuple[int, int, int]] = field(default_factory=list)
