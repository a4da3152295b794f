"""``stepscope.collect.profile``: the PyTorch profiler armed with a schedule, plus system counters.

::

    with stepscope.collect.profile("runs/exp1", wait=1, warmup=1, active=3) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Traces land in ``runs/exp1`` in the ``tensorboard_trace_handler`` layout
(``<worker>.<time_ns>.pt.trace.json.gz``), each with ``stepscope.*`` counter tracks of the
system metrics sampled during its active window. torch is imported only when a profile starts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepscope.collect.sampler import SystemSampler
from stepscope.collect.trace_file import TraceWriter
from stepscope.errors import UsageError

INSTALL_HINT = "PyTorch is needed to capture traces: pip install 'stepscope[torch]' (or pip install torch)"


def import_torch() -> Any:
    """Import torch lazily, with an install hint when it is missing."""
    try:
        import torch
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    return torch


@dataclass(frozen=True)
class ProfileOptions:
    """What the profiler records and when (the ``torch.profiler.schedule`` arguments)."""

    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1
    skip_first: int = 0
    record_shapes: bool = True
    profile_memory: bool = True
    with_stack: bool = False
    with_modules: bool = True
    with_flops: bool = False

    @property
    def steps_needed(self) -> int:
        """Optimizer steps the schedule takes to record every cycle in full (one cycle when ``repeat`` is 0)."""
        return self.skip_first + (self.wait + self.warmup + self.active) * max(self.repeat, 1)

    @property
    def steps_asked(self) -> int:
        """Steps the schedule records in full (those of one cycle when ``repeat`` is 0: until the script ends)."""
        return self.active * max(self.repeat, 1)

    def validate(self) -> None:
        """Raise :class:`UsageError` on a schedule torch would reject or misread."""
        if min(self.wait, self.warmup, self.repeat, self.skip_first) < 0 or self.active < 1:
            raise UsageError("schedule needs wait, warmup, repeat, skip_first >= 0 and active >= 1")


class ProfileSession:
    """What ``profile`` yields: call :meth:`step` once per training step."""

    def __init__(self, prof: Any, writer: TraceWriter, out_dir: Path) -> None:
        self.profiler = prof  # the torch.profiler.profile object, for advanced use
        self.out_dir = out_dir
        self._writer = writer
        self._window_start_ns = time.time_ns()
        self._recording = self._is_recording()
        self.recorded_steps = 0  # steps recorded in full: a step() that ended a step of a recording window
        if self._recording:
            self._open_window()

    @property
    def trace_files(self) -> tuple[Path, ...]:
        """The trace files written so far."""
        return tuple(self._writer.files)

    @property
    def step_num(self) -> int:
        """How many steps the profiler has seen."""
        return int(self.profiler.step_num)

    @property
    def in_window(self) -> bool:
        """Whether a recording window is open: when the profile ends now, its trace's last step is partial
        (from the last step() to the end) and the window holds fewer steps than ``active``."""
        return self._recording

    def step(self) -> None:
        """Mark the end of a training step (advances the profiler schedule)."""
        if self._recording:
            self.recorded_steps += 1
        self.profiler.step()
        recording = self._is_recording()
        if recording and not self._recording:
            self._open_window()
        self._recording = recording

    def _open_window(self) -> None:
        """A recording window starts: remember when, and sample the system at its start."""
        self._window_start_ns = time.time_ns()
        if self._writer.sampler is not None:
            self._writer.sampler.sample_now()

    def window_start_ns(self) -> int:
        """Unix time (ns) when the current recording window began."""
        return self._window_start_ns

    def _is_recording(self) -> bool:
        return self.phase() in ("RECORD", "RECORD_AND_SAVE")

    def phase(self) -> str:
        """The schedule's action for the step under way: ``NONE`` (the profiler off: skipped or waiting
        steps, and every step after the last cycle), ``WARMUP``, ``RECORD``, ``RECORD_AND_SAVE``."""
        action = getattr(self.profiler, "current_action", None)
        return str(getattr(action, "name", "NONE"))


def _torch_profiler(torch: Any, opts: ProfileOptions, writer: TraceWriter) -> Any:
    tp = torch.profiler
    activities = [tp.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(tp.ProfilerActivity.CUDA)
    schedule = tp.schedule(wait=opts.wait, warmup=opts.warmup, active=opts.active,
                           repeat=opts.repeat, skip_first=opts.skip_first)
    return tp.profile(
        activities=activities, schedule=schedule, on_trace_ready=writer,
        record_shapes=opts.record_shapes, profile_memory=opts.profile_memory,
        with_stack=opts.with_stack, with_modules=opts.with_modules, with_flops=opts.with_flops,
    )


@contextmanager
def profile(
    out_dir: str | os.PathLike[str],
    *,
    wait: int = 1,
    warmup: int = 1,
    active: int = 3,
    repeat: int = 1,
    record_shapes: bool = True,
    profile_memory: bool = True,
    with_stack: bool = False,
    with_modules: bool = True,
    worker_name: str | None = None,
    use_gzip: bool = True,
    sample_system: bool = True,
    sample_interval_s: float = 0.1,
    options: ProfileOptions | None = None,
) -> Iterator[ProfileSession]:
    """Profile the enclosed training loop into ``out_dir``; call ``.step()`` after each step.

    The keyword arguments are those of ``torch.profiler.schedule`` / ``torch.profiler.profile``;
    ``options`` overrides them all at once. ``worker_name`` prefixes the file names
    (``<hostname>_<pid>`` by default; use ``f"worker{rank}"`` in distributed runs).
    ``sample_system`` runs the :class:`SystemSampler` and writes its counters into each trace.

    Raises:
        UsageError: torch is not installed, or the schedule is invalid.
    """
    opts = options or ProfileOptions(wait=wait, warmup=warmup, active=active, repeat=repeat,
                                     record_shapes=record_shapes, profile_memory=profile_memory,
                                     with_stack=with_stack, with_modules=with_modules)
    opts.validate()
    torch = import_torch()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sampler = SystemSampler(sample_interval_s) if sample_system else None
    holder: list[ProfileSession] = []
    writer = TraceWriter(out, worker_name, use_gzip, sampler,
                         window_start_ns=lambda: holder[0].window_start_ns() if holder else 0)
    prof = _torch_profiler(torch, opts, writer)
    if sampler is not None:
        sampler.start()
    try:
        with prof:
            holder.append(ProfileSession(prof, writer, out))
            yield holder[0]
    finally:
        if sampler is not None:
            sampler.stop()


@contextmanager
def annotate(name: str) -> Iterator[None]:
    """A named range on the profiler timeline (``record_function``), and an NVTX range on CUDA."""
    torch = import_torch()
    nvtx = torch.cuda.nvtx if torch.cuda.is_available() else None
    if nvtx is not None:
        nvtx.range_push(name)
    try:
        with torch.profiler.record_function(name):
            yield
    finally:
        if nvtx is not None:
            nvtx.range_pop()
