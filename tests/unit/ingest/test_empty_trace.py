"""A trace with no event at all is refused by every command (one line, exit 2), as ``{"foo": 1}`` is.

Before: ``[1,2,3]`` or ``{"traceEvents": []}`` exited 0 and printed ~80 lines of zero tables
("bound by: compute; device busy 0.0 %"). A trace with one event, and a run directory where only
some rank files are empty, are still read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stepscope
from stepscope.errors import TraceFormatError
from tests.unit.ingest.helpers import CliResult, assert_one_line_error, run_in_process

EMPTY = {"no_events.json": b'{"traceEvents": []}', "numbers.json": b"[1, 2, 3]"}
ONE_EVENT = {"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 10, "dur": 5, "pid": 1, "tid": 1}]}


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> CliResult:
    return run_in_process(args, capsys)


def _commands(path: Path, tmp: Path, other: Path) -> dict[str, list[str]]:
    p = str(path)
    return {"analyze": ["analyze", p], "analyze --json": ["analyze", "--json", p],
            "analyze --map-reduce": ["analyze", "--json", "--map-reduce", p],
            "advise": ["advise", p], "export": ["export", p, "-o", str(tmp / "out.json")],
            "diff base": ["diff", "--no-findings", p, str(other)], "diff new": ["diff", "--no-findings", str(other), p],
            "sql": ["sql", p, "SELECT count(*) FROM events"], "report": ["report", p, "-o", str(tmp / "r.html")],
            "report --md": ["report", "--md", p], "whatif": ["whatif", p, "--workers", "2"]}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_every_command_refuses_a_trace_without_events(name: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_bytes(EMPTY[name])
    other = tmp_path / "one_event.json"
    other.write_text(json.dumps(ONE_EVENT))
    for what, args in _commands(path, tmp_path, other).items():
        res = _run([*args[:1], "--no-cache", *args[1:]], capsys)
        assert_one_line_error(res, path)
        assert "no trace events" in res.stderr, (what, res.stderr)
        assert res.stdout == "", (what, res.stdout)


def test_load_refuses_it_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "no_events.json"
    path.write_bytes(EMPTY["no_events.json"])
    with pytest.raises(TraceFormatError, match=r"no_events\.json: no trace events"):
        stepscope.load(path, use_cache=False)


def test_a_trace_with_one_event_is_still_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "one_event.json"
    path.write_text(json.dumps(ONE_EVENT))
    assert len(stepscope.load(path, use_cache=False).events) == 1
    res = _run(["analyze", "--no-cache", str(path)], capsys)
    assert res.returncode == 0, res.stderr
    assert "1 events" in res.stdout


def test_a_run_with_some_empty_ranks_is_read_and_the_empty_rank_alone_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "rank0.json").write_bytes(EMPTY["no_events.json"])
    (run / "rank1.json").write_text(json.dumps(ONE_EVENT))
    assert stepscope.load(run, use_cache=False).rank_ids == [0, 1]
    for extra in ([], ["--json", "--map-reduce"]):
        assert _run(["analyze", "--no-cache", *extra, str(run)], capsys).returncode == 0
        res = _run(["analyze", "--no-cache", *extra, "--rank", "0", str(run)], capsys)
        assert_one_line_error(res, run)
        assert "rank 0 holds no trace events" in res.stderr
    (run / "rank1.json").write_bytes(EMPTY["no_events.json"])
    res = _run(["analyze", "--no-cache", str(run)], capsys)
    assert_one_line_error(res, run)
    assert "none of its 2 trace files" in res.stderr
