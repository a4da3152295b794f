"""The step log ``stepscope run`` writes beside its traces (``ingest.step_records``): the steps run
without the profiler reach the rank's metadata, read on every load; a bad line is skipped and counted;
a folder of several ranks' traces gets none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stepscope
from stepscope.collect import runner
from stepscope.ingest import step_records
from stepscope.model.trace import UNPROFILED_STEPS_KEY
from tests.builders import TraceBuilder, load_ranks


def _builder() -> TraceBuilder:
    b = TraceBuilder()
    b.step(1, 0, 1_000)
    b.op("aten::relu", ts=10, dur=20)
    return b


def _log(folder: Path, lines: list[str]) -> Path:
    path = folder / step_records.STEPS_FILE
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def _rec(step: int, ms: float, profiler: str) -> str:
    return json.dumps({"step": step, "end_s": step * 0.1, "batch_cost_s": ms / 1e3, "reader_cost_s": 0.0,
                       "samples": 4, "ips": 1.0, "profiler": profiler})


def test_the_writer_and_the_reader_name_one_file() -> None:
    assert runner.STEPS_FILE == step_records.STEPS_FILE


def test_only_the_unprofiled_steps_after_the_first(tmp_path: Path) -> None:
    """Step 0 (the program's warm-up) and the steps the profiler warmed up or recorded are left out."""
    path = _log(tmp_path, [_rec(0, 90.0, "NONE"), _rec(1, 10.0, "NONE"), _rec(2, 30.0, "WARMUP"),
                           _rec(3, 31.0, "RECORD"), _rec(4, 32.0, "RECORD_AND_SAVE"), _rec(5, 12.5, "NONE")])
    assert step_records.unprofiled_steps_ns(str(path)) == ([10_000_000, 12_500_000], 0)


@pytest.mark.parametrize("bad", ["not json", "[1, 2]", '{"step": 1}', '{"step": "x", "batch_cost_s": 0.01, '
                                 '"profiler": "NONE"}', _rec(2, -5.0, "NONE"), _rec(2, 1e12, "NONE"),
                                 '{"step": 2, "batch_cost_s": NaN, "profiler": "NONE"}'])
def test_a_line_that_is_not_a_record_is_skipped_and_counted(tmp_path: Path, bad: str) -> None:
    path = _log(tmp_path, [_rec(1, 10.0, "NONE"), bad, _rec(2, 11.0, "NONE")])
    assert step_records.unprofiled_steps_ns(str(path)) == ([10_000_000, 11_000_000], 1)


def test_a_log_past_the_size_cap_is_read_up_to_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = _rec(1, 10.0, "NONE")
    monkeypatch.setattr(step_records, "MAX_BYTES", 3 * (len(line) + 1) + 5)  # 3 lines and the start of a 4th
    path = _log(tmp_path, [line] * 10)
    assert step_records.unprofiled_steps_ns(str(path)) == ([10_000_000] * 3, 0)


def test_the_rank_gets_its_steps_on_every_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read after the cache too: a log written after the trace was first read still counts, and the
    cache entry does not keep it."""
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    trace_file = _builder().write(tmp_path / "trace.json")
    assert UNPROFILED_STEPS_KEY not in stepscope.load(trace_file).ranks[0].metadata
    _log(tmp_path, [_rec(1, 10.0, "NONE"), "junk", _rec(2, 11.0, "NONE")])
    trace = stepscope.load(trace_file)  # from the cache
    assert trace.ranks[0].metadata[UNPROFILED_STEPS_KEY] == [10_000_000, 11_000_000]
    (diag,) = [d for d in trace.diagnostics if d.name == "step-records"]
    assert diag.count == 1 and diag.severity == "warning"
    (tmp_path / step_records.STEPS_FILE).unlink()
    assert UNPROFILED_STEPS_KEY not in stepscope.load(trace_file).ranks[0].metadata


def test_a_folder_of_several_ranks_gets_none(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _log(run, [_rec(1, 10.0, "NONE"), _rec(2, 11.0, "NONE")])
    trace = load_ranks([_builder(), _builder()], tmp_path)
    assert len(trace.ranks) == 2
    assert all(UNPROFILED_STEPS_KEY not in r.metadata for r in trace.ranks)


def test_a_log_that_is_not_a_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / step_records.STEPS_FILE).mkdir()
    trace = stepscope.load(_builder().write(tmp_path / "trace.json"), use_cache=False)
    assert UNPROFILED_STEPS_KEY not in trace.ranks[0].metadata
    assert not [d for d in trace.diagnostics if d.name == "step-records"]


def test_an_unreadable_log_is_said_and_the_trace_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _log(tmp_path, [_rec(1, 10.0, "NONE"), _rec(2, 11.0, "NONE")])

    def refuse(path: str) -> tuple[list[int], int]:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(step_records, "unprofiled_steps_ns", refuse)  # root reads any mode: the OS error itself
    trace = stepscope.load(_builder().write(tmp_path / "trace.json"), use_cache=False)
    assert UNPROFILED_STEPS_KEY not in trace.ranks[0].metadata
    (diag,) = [d for d in trace.diagnostics if d.name == "step-records"]
    assert "could not be read: Permission denied" in diag.example
