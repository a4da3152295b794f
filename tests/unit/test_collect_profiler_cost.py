"""``stepscope run`` times the steps the profiler does not record (its action NONE: waiting, and every
step after the last cycle) and sets them against the traces' mean step; the records are kept beside
the traces, each with the profiler's action, in a file no trace reader takes."""

from __future__ import annotations

import json
from pathlib import Path

from stepscope.collect.runner import STEPS_FILE, RunResult, profiler_cost_line, write_step_records
from stepscope.collect.step_timer import StepRecord
from stepscope.ingest.layout import resolve


def _result(tmp_path: Path, costs_ms: list[float], phases: list[str]) -> RunResult:
    recs = tuple(StepRecord(i, float(i), c / 1e3, 0.0, 1) for i, c in enumerate(costs_ms))
    return RunResult(tmp_path, (), recs, 0, phases.count("RECORD"), False, tuple(phases))


def test_steps_off_the_profiler_against_the_recorded_mean(tmp_path: Path) -> None:
    # step 0 (the program's warm-up, 500 ms) is left out; the NONE steps after it: 20, 22, 24 and a 90 ms
    # hiccup -> 23 ms at the median (their mean, 39 ms, would read as a profiler that costs nothing)
    r = _result(tmp_path, [500, 40, 41, 44, 45, 20, 22, 90, 24],
                ["NONE", "WARMUP", "RECORD", "RECORD", "RECORD_AND_SAVE", "NONE", "NONE", "NONE", "NONE"])
    line = profiler_cost_line(r, 34.5)
    assert line is not None and line.startswith("without the profiler: median step 23.00 ms (4 steps")
    assert "against the traces' 34.50 ms (+50 %" in line


def test_nothing_said_without_two_unprofiled_steps(tmp_path: Path) -> None:
    r = _result(tmp_path, [500, 40, 41, 44, 20], ["NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE"])
    assert profiler_cost_line(r, 33.0) is None


def test_the_records_are_kept_where_no_reader_looks(tmp_path: Path) -> None:
    trace = tmp_path / "w.123.pt.trace.json"
    trace.write_text('{"traceEvents": []}')
    r = _result(tmp_path, [500, 40, 20], ["NONE", "RECORD_AND_SAVE", "NONE"])
    path = write_step_records(r)
    assert path.name == STEPS_FILE
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(x["step"], x["profiler"], round(x["batch_cost_s"] * 1e3)) for x in rows] == [
        (0, "NONE", 500), (1, "RECORD_AND_SAVE", 40), (2, "NONE", 20)]
    assert resolve(tmp_path).files == (str(trace),)  # the run directory still reads as its one trace


def test_the_reader_takes_the_steps_the_run_line_timed(tmp_path: Path) -> None:
    """What ``stepscope run`` writes, ``ingest.step_records`` reads as the same unprofiled steps its line
    averaged (step 0 and the profiled steps left out): the analysis calibrates on the run's own numbers."""
    from stepscope.ingest.step_records import unprofiled_steps_ns

    r = _result(tmp_path, [500, 40, 41, 44, 45, 20, 22, 24],
                ["NONE", "WARMUP", "RECORD", "RECORD", "RECORD_AND_SAVE", "NONE", "NONE", "NONE"])
    steps, bad = unprofiled_steps_ns(str(write_step_records(r)))
    assert (steps, bad) == ([20_000_000, 22_000_000, 24_000_000], 0)
