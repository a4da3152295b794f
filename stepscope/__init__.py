"""stepscope: why a training or inference step is slow, with numbers, and what to change.

The public API is small: :func:`load` a trace into the canonical :class:`Trace`, then run the
analyses, the advisor and the renderers over it; in a notebook, :func:`analyze` and :func:`diff`
give results that display themselves (``stepscope.notebook``).
"""

from __future__ import annotations

import typing

from stepscope.collect import StepTimer, profile
from stepscope.errors import StepscopeError, TraceFormatError
from stepscope.ingest import load
from stepscope.model.trace import Trace

if typing.TYPE_CHECKING:
    from stepscope.notebook import analyze, diff

__version__ = "0.1.0"

__all__ = [
    "StepTimer",
    "StepscopeError",
    "Trace",
    "TraceFormatError",
    "__version__",
    "analyze",
    "diff",
    "load",
    "profile",
]


def __getattr__(name: str) -> object:
    """``analyze`` and ``diff`` (stepscope.notebook) import the analyses on first use (``import stepscope`` stays
    light)."""
    if name in ("analyze", "diff"):
        from stepscope import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'stepscope' has no attribute {name!r}")
