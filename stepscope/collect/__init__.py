"""Capture: profile a PyTorch training loop, time its steps, sample the system.

* :func:`profile`: the PyTorch profiler with a schedule, writing traces in the
  ``tensorboard_trace_handler`` layout with ``stepscope.*`` system counter tracks inside.
* :class:`StepTimer`: ``ips`` / ``batch_cost`` / ``reader_cost`` per step, logged every N steps.
* :class:`SystemSampler`: the background sampler behind the counter tracks.
* :func:`annotate`: a named range (``record_function``, plus NVTX on CUDA).

torch is imported only when a capture starts, so importing this package is cheap.
"""

from __future__ import annotations

from stepscope.collect.profiler import ProfileOptions, ProfileSession, annotate, profile
from stepscope.collect.sampler import SystemSampler
from stepscope.collect.step_timer import StepRecord, StepSummary, StepTimer, summarise_records

__all__ = [
    "ProfileOptions",
    "ProfileSession",
    "StepRecord",
    "StepSummary",
    "StepTimer",
    "SystemSampler",
    "annotate",
    "profile",
    "summarise_records",
]
