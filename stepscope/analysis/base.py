"""What every analysis shares: the signal that it cannot run on this trace."""

from __future__ import annotations


class NotApplicable(Exception):
    """Raised by an analysis whose input data the trace does not carry (said once, quietly)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
