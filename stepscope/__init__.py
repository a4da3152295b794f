"""stepscope: why a training or inference step is slow, with numbers, and what to change.

The public API is small: :func:`load` a trace into the canonical :class:`Trace`, then run the
analyses, the advisor and the renderers over it; in a notebook, :func:`analyze` and :func:`diff`
give results that display themselves (``stepscope.notebook``).
"""

from __future__ import annotations

import importlib
import typing

from stepscope.errors import StepscopeError, TraceFormatError

if typing.TYPE_CHECKING:
    from stepscope.collect import StepTimer, profile
    from stepscope.ingest import load
    from stepscope.model.trace import Trace
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


#: the public names and the modules that define them, imported on first use: ``import stepscope``
#: stays light, and imports no numpy, so the command line can set the C library's heap up before
#: numpy starts its threads (``stepscope.cli``)
_LAZY = {"StepTimer": "stepscope.collect", "profile": "stepscope.collect", "load": "stepscope.ingest",
         "Trace": "stepscope.model.trace", "analyze": "stepscope.notebook", "diff": "stepscope.notebook"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'stepscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
