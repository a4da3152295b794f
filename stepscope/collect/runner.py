"""Profile an unmodified training script: the engine behind ``stepscope run -- python train.py ...``.

The script runs in this process through :mod:`runpy` (as ``__main__``, with its own ``sys.argv``)
while three hooks are in place:

* a global optimizer step post-hook advances the profiler schedule and the :class:`StepTimer`
  at each ``optimizer.step()`` of the first optimizer that steps (a GAN's second optimizer does
  not count twice);
* ``DataLoader`` iterators' ``__next__`` is timed as the step's reader cost;
* the :class:`~stepscope.collect.sampler.SystemSampler` writes counter tracks into each trace.

Everything is undone when the script ends, however it ends.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import statistics
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepscope.collect.profiler import ProfileOptions, ProfileSession, import_torch, profile
from stepscope.collect.step_timer import StepRecord, StepTimer
from stepscope.errors import UsageError

_PYTHON_RE = re.compile(r"^python[0-9.]*(\.exe)?$")
#: interpreter flags accepted (and ignored) before the script, e.g. ``python -u train.py``
_IGNORED_FLAGS = frozenset({"-u", "-B", "-O", "-OO"})


@dataclass(frozen=True)
class ScriptTarget:
    """What to run: a script path or a module (``-m``), and the arguments it sees."""

    kind: str  # "path" | "module"
    name: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class RunResult:
    """The outcome of one profiled run."""

    out_dir: Path
    trace_files: tuple[Path, ...]
    records: tuple[StepRecord, ...]
    exit_code: int  # the script's: 0 ok, its sys.exit code, 1 on an exception, 130 on Ctrl-C
    recorded_steps: int = 0  # profiled steps recorded in full
    cut_short: bool = False  # the script ended inside a recording window: the last trace ends in a partial step
    phases: tuple[str, ...] = ()  # per record (optimizer step), the profiler's action during it (ProfileSession.phase)


def parse_command(argv: Sequence[str]) -> ScriptTarget:
    """Read ``python [-u] train.py args`` / ``python -m pkg.mod args`` / ``train.py args``.

    Raises:
        UsageError: nothing to run, or an interpreter flag this in-process runner cannot honour.
    """
    words = list(argv)
    if words and _PYTHON_RE.match(os.path.basename(words[0])):
        words = words[1:]
    while words and words[0] in _IGNORED_FLAGS:
        words = words[1:]
    if not words:
        raise UsageError("nothing to run: give the command after --, e.g. -- python train.py")
    if words[0] == "-m":
        if len(words) < 2:
            raise UsageError("-m needs a module name")
        return ScriptTarget("module", words[1], tuple(words[2:]))
    if words[0].startswith("-"):
        raise UsageError(f"interpreter option {words[0]} is not supported by stepscope run")
    if not Path(words[0]).is_file():
        raise UsageError("no such script (file not found)", words[0])
    return ScriptTarget("path", words[0], tuple(words[1:]))


@contextmanager
def _script_context(target: ScriptTarget) -> Iterator[None]:
    """``sys.argv`` and ``sys.path[0]`` as ``python`` would set them; restored afterwards."""
    old_argv, old_path = sys.argv[:], sys.path[:]
    if target.kind == "path":
        sys.argv = [target.name, *target.args]
        sys.path.insert(0, str(Path(target.name).resolve().parent))
    else:
        sys.argv = [target.name, *target.args]
        sys.path.insert(0, os.getcwd())
    try:
        yield
    finally:
        sys.argv, sys.path[:] = old_argv, old_path


def _exec_script(target: ScriptTarget) -> int:
    """Run the target as ``__main__``; returns its exit code instead of raising."""
    try:
        with _script_context(target):
            if target.kind == "module":
                runpy.run_module(target.name, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target.name, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or isinstance(code, int):
            return int(code or 0)
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception:
        traceback.print_exc()
        return 1
    return 0


@contextmanager
def step_hooks(session: ProfileSession, timer: StepTimer, phases: list[str] | None = None) -> Iterator[None]:
    """Step the profiler and the timer at each optimizer step (``phases`` gets the profiler's action
    during each step); time DataLoader ``__next__``."""
    torch = import_torch()
    from torch.optim.optimizer import register_optimizer_step_post_hook

    first: list[int] = []

    def on_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if not first:
            first.append(id(optimizer))
        if id(optimizer) == first[0]:
            if phases is not None:
                phases.append(session.phase())
            session.step()
            timer.step()

    handle = register_optimizer_step_post_hook(on_step)
    loader_iter = torch.utils.data.dataloader._BaseDataLoaderIter
    original_next = loader_iter.__next__

    def timed_next(self: Any) -> Any:
        with timer.reading():
            return original_next(self)

    loader_iter.__next__ = timed_next
    try:
        yield
    finally:
        loader_iter.__next__ = original_next
        handle.remove()


def run_script(
    argv: Sequence[str],
    out_dir: str | os.PathLike[str],
    options: ProfileOptions | None = None,
    log_every: int = 10,
    worker_name: str | None = None,
    sample_interval_s: float = 0.1,
    batch_size: int | None = None,
) -> RunResult:
    """Run a training script with the profiler armed; see the module docstring.

    Raises:
        UsageError: bad command, bad schedule, or torch missing.
    """
    target = parse_command(argv)
    opts = options or ProfileOptions()
    timer = StepTimer(log_every=log_every, batch_size=batch_size,
                      log=lambda line: print(f"[stepscope] {line}", file=sys.stderr))
    phases: list[str] = []
    with profile(out_dir, options=opts, worker_name=worker_name,
                 sample_interval_s=sample_interval_s) as session, step_hooks(session, timer, phases):
        code = _exec_script(target)
        cut_short = session.in_window  # before the profiler's exit writes the window
    return RunResult(Path(out_dir), session.trace_files, timer.records, code, session.recorded_steps, cut_short,
                     tuple(phases))


#: the step records of a run, beside its traces (a suffix no trace reader takes); ``ingest.step_records``
#: reads the unprofiled steps from it under the same name (the analysis of the profiler's cost calibrates on them)
STEPS_FILE = "stepscope-steps.jsonl"


def profiler_cost_line(result: RunResult, recorded_step_ms: float) -> str | None:
    """The run's steps timed with the profiler off (the wall time between optimizer steps; the first
    step, the program's own warm-up, left out) against the traces' mean step ``recorded_step_ms``: what
    the profiler's own cost added. None with fewer than two such steps."""
    free = [r.batch_cost_s for r, ph in list(zip(result.records, result.phases))[1:] if ph == "NONE"]
    if len(free) < 2 or recorded_step_ms <= 0:
        return None
    free_ms = 1e3 * statistics.median(free)  # the script's warm-up steps and hiccups are among them
    return (f"without the profiler: median step {free_ms:.2f} ms ({len(free)} steps, wall time between optimizer "
            f"steps), against the traces' {recorded_step_ms:.2f} ms ({(recorded_step_ms / free_ms - 1) * 100:+.0f} %: "
            f"where positive, the profiler's own cost the traces carry)")


def write_step_records(result: RunResult) -> Path:
    """The step timer's records with the profiler's action in each, one JSON object per line."""
    path = result.out_dir / STEPS_FILE
    lines = (json.dumps({**r.to_dict(), "profiler": ph}) for r, ph in zip(result.records, result.phases))
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def capture_shortfall(result: RunResult, opts: ProfileOptions) -> list[str]:
    """The warning (lines) for a capture that recorded fewer complete steps than the schedule asked for,
    or whose last trace ends in a partial step (the script ended inside a recording window); none when whole."""
    if not result.trace_files or not (result.cut_short or result.recorded_steps < opts.steps_asked):
        return []
    lines = []
    if result.recorded_steps < opts.steps_asked:
        cycles = f" x repeat {opts.repeat}" if opts.repeat > 1 else ""
        lines.append(f"short capture: the schedule asked for {opts.steps_asked} recorded steps (wait {opts.wait} + "
                     f"warmup {opts.warmup} + active {opts.active}{cycles} = {opts.steps_needed} optimizer steps), the "
                     f"script made {len(result.records)} optimizer steps: {result.recorded_steps} recorded in full.")
    else:  # --repeat 0: the script ended inside a later cycle
        lines.append("the script ended inside a profiling window: the last trace holds fewer steps than --active.")
    if result.cut_short:
        lines.append("The last profiled step is partial (from the last optimizer.step() to the script's end): "
                     "the figures above, the mean step time among them, are not representative.")
    if result.recorded_steps < opts.steps_asked:
        lines.append(f"Run at least {opts.steps_needed} optimizer steps, or lower --wait / --warmup / --active.")
    return lines
