"""stepscope: why a training or inference step is slow, with numbers, and what to change.

The public API is small: :func:`load` a trace into the canonical :class:`Trace`, then run the
analyses, the advisor and the renderers over it.
"""

from __future__ import annotations

from stepscope.collect import StepTimer, profile
from stepscope.errors import StepscopeError, TraceFormatError
from stepscope.ingest import load
from stepscope.model.trace import Trace

__version__ = "0.1.0"

__all__ = [
    "StepTimer",
    "StepscopeError",
    "Trace",
    "TraceFormatError",
    "__version__",
    "load",
    "profile",
]
