"""The steps ``stepscope run`` timed without the profiler, read from its sidecar beside the traces.

``stepscope run`` keeps every optimizer step's wall time with the profiler's action during it
(``NONE``, ``WARMUP``, ``RECORD``, ``RECORD_AND_SAVE``) in ``stepscope-steps.jsonl`` in the folder of
its traces (:data:`STEPS_FILE`, one JSON object a line). The steps the profiler did not touch are the
program's own pace on this machine: the ground truth the analysis of the profiler's cost
(:mod:`stepscope.analysis.profiler_cost`) calibrates on instead of its default constant.

:func:`attach_step_records` puts them in the rank's metadata (``unprofiled_step_ns``: the ``NONE``
steps' wall times, the run's first step — the program's own warm-up — left out). Only where the
folder holds one rank's trace: the steps of several processes writing one file cannot be told apart.
The file is the user's and untrusted: read up to :data:`MAX_BYTES`, a line that is not such a record
is skipped and counted in the ``step-records`` diagnostic.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import msgspec

from stepscope.errors import UsageError
from stepscope.model.diagnostics import Diagnostic
from stepscope.model.trace import UNPROFILED_GIVEN_KEY, UNPROFILED_STEPS_KEY, Trace

#: the file ``stepscope run`` writes beside its traces (``collect.runner.STEPS_FILE``: the same name)
STEPS_FILE = "stepscope-steps.jsonl"
MAX_BYTES = 16 << 20  # ~100 k steps; past this the file is not a step log
NO_PROFILER = "NONE"


class _Record(msgspec.Struct):
    step: int
    batch_cost_s: float
    profiler: str


_DECODER = msgspec.json.Decoder(_Record)


def step_record_files(files: Sequence[str]) -> list[str]:
    """The step logs beside the trace ``files`` (one per folder holding one)."""
    found = {Path(f).parent / STEPS_FILE for f in files}
    return [str(p) for p in sorted(found) if p.is_file()]


def unprofiled_steps_ns(path: str) -> tuple[list[int], int]:
    """The wall times (ns) of the steps run without the profiler in the step log ``path``, the first
    step of the run left out, and how many lines were not records."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    lines = data[:MAX_BYTES].splitlines()
    if len(data) > MAX_BYTES and lines:
        lines = lines[:-1]  # cut mid-line
    out: list[int] = []
    bad = 0
    for line in lines:  # one line per optimizer step of the run: a few thousand at most
        if not line.strip():
            continue
        try:
            rec = _DECODER.decode(line)
        except msgspec.DecodeError:
            bad += 1
            continue
        ok = math.isfinite(rec.batch_cost_s) and 0 < rec.batch_cost_s < 86_400
        if not ok:
            bad += 1
        elif rec.profiler == NO_PROFILER and rec.step > 0:
            out.append(round(rec.batch_cost_s * 1e9))
    return out, bad


def attach_step_records(trace: Trace, files: Sequence[str]) -> Trace:
    """``trace`` with each rank whose folder holds a step log given its unprofiled steps
    (``RankInfo.metadata["unprofiled_step_ns"]``; see the module docstring)."""
    logs = {str(Path(f).parent): f for f in step_record_files(files)}
    if not logs:
        return trace
    per_folder: dict[str, list[int]] = {}
    for i, r in enumerate(trace.ranks):
        per_folder.setdefault(str(Path(r.source).parent), []).append(i)
    ranks = list(trace.ranks)
    diags: list[Diagnostic] = []
    for folder, log in logs.items():
        owners = per_folder.get(folder, [])
        if len(owners) != 1:
            continue
        try:
            steps, bad = unprofiled_steps_ns(log)
        except OSError as exc:  # unreadable (permissions, a directory of that name): the traces still load
            diags.append(Diagnostic("step-records", "warning", 1, f"{log} could not be read: {exc.strerror or exc}",
                                    source=log))
            continue
        if bad:
            diags.append(Diagnostic("step-records", "warning", bad,
                                    f"{bad} line(s) of {log} are not step records: skipped", source=log))
        if steps:
            r = ranks[owners[0]]
            ranks[owners[0]] = dataclasses.replace(r, metadata={**r.metadata, UNPROFILED_STEPS_KEY: steps})
    return dataclasses.replace(trace, ranks=tuple(ranks), diagnostics=(*trace.diagnostics, *diags))



#: the longest step one may give (ms, ~11.6 days): its ns stay far inside an int64
MAX_GIVEN_STEP_MS = 1e9


def given_step_problem(step_ms: float) -> str | None:
    """Why ``step_ms`` cannot be a step timed without the profiler (None when it can): it must be a finite
    number of milliseconds above 0 and at most :data:`MAX_GIVEN_STEP_MS` (NaN, infinity, 0 and -1 are not)."""
    if isinstance(step_ms, bool) or not math.isfinite(step_ms) or not 0 < step_ms <= MAX_GIVEN_STEP_MS:
        return f"must be a step time in milliseconds above 0 and at most {MAX_GIVEN_STEP_MS:g} (got {step_ms!r})"
    return None


def with_given_step(trace: Trace, step_ms: float) -> Trace:
    """``trace`` with every rank given the step the user timed without the profiler (``--step-ms``: a
    training log's step time): the profiler's cost per op is then measured from it, as from a step log.
    A ``step_ms`` :func:`given_step_problem` refuses is a :class:`~stepscope.errors.UsageError`."""
    problem = given_step_problem(step_ms)
    if problem is not None:
        raise UsageError(f"the step timed without the profiler {problem}")
    ranks = tuple(dataclasses.replace(r, metadata={**r.metadata, UNPROFILED_GIVEN_KEY: round(step_ms * 1e6)})
                  for r in trace.ranks)
    return dataclasses.replace(trace, ranks=ranks)
