"""The exceptions stepscope raises on bad input or bad use.

::

    StepscopeError                 base: every error the CLI turns into one line and exit code 2
     ├── TraceFormatError          the file is not a trace we can read (not JSON, gzip junk, empty ...)
     ├── UnsupportedFormatError    a format we recognise but cannot read
     ├── NoTraceFoundError         a directory with no trace file in it
     └── UsageError                a bad option, rank or step selection

Each error names the file it is about, so the one-line message is actionable.
"""

from __future__ import annotations

from pathlib import Path


class StepscopeError(Exception):
    """Base of every error stepscope raises on purpose."""

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        if "\n" in message or "\r" in message:  # e.g. SQLite quoting a damaged schema: one line, always
            message = " ".join(message.split())
        self.message = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class TraceFormatError(StepscopeError):
    """The input is not a readable trace (corrupt, empty, wrong structure)."""


class UnsupportedFormatError(StepscopeError):
    """The input is a format stepscope does not read."""


class NoTraceFoundError(StepscopeError):
    """A directory holds no trace file stepscope can read."""


class UsageError(StepscopeError):
    """A selection or option that does not fit the trace (no such rank, step ...)."""
