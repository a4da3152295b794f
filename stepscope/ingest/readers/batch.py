"""What every reader returns for one file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FileBatch:
    """Everything read from one file: columns with global string ids, its JSON metadata, losses."""

    path: str
    size_bytes: int
    parts: list[Any] = field(default_factory=list)  # what ``consume`` made of each chunk
    n_events: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    repairs: list[tuple[str, str, str, int]] = field(default_factory=list)  # (name, severity, example, count)
    lost_bytes: int = 0
    complete: bool = True
    meta_error: str = ""
