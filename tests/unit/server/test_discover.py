"""Which runs a served directory holds, and that nothing outside it is ever listed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from stepscope.errors import NoTraceFoundError, UsageError
from stepscope.server.discover import discover_runs, run_id
from tests.unit.server.served import DATA, DEFAULT_TRACE, make_served_dir


def test_runs_of_a_mixed_directory(tmp_path: Path) -> None:
    runs = discover_runs(make_served_dir(tmp_path))
    assert [(r.label, r.kind) for r in runs] == [
        ("cpu_ddp_2rank", "directory"), ("default_trace.pt.trace.json.gz", "file"),
        ("h100/base", "directory"), ("h100/fixed", "directory")]
    assert len({r.id for r in runs}) == 4
    for r in runs:
        assert len(r.id) == 12 and all(c in "0123456789abcdef" for c in r.id)
        assert str(tmp_path) not in r.id and r.label not in r.id


def test_ids_are_stable_and_relative(tmp_path: Path) -> None:
    a = discover_runs(make_served_dir(tmp_path / "a"))
    b = discover_runs(make_served_dir(tmp_path / "b"))
    assert [r.id for r in a] == [r.id for r in b]  # same layout, same ids, wherever it lives
    assert run_id(tmp_path, tmp_path / "x") != run_id(tmp_path, tmp_path / "y")


def test_tensorboard_rank_files_at_the_root_make_one_run(tmp_path: Path) -> None:
    for f in (DATA / "cpu_ddp_2rank").iterdir():
        shutil.copy(f, tmp_path / f.name)
    runs = discover_runs(tmp_path)
    assert [(r.label, r.kind) for r in runs] == [(tmp_path.name, "directory")]


def test_symlinks_out_of_the_root_are_not_served(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_served_dir(outside)
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(DEFAULT_TRACE, root / "mine.pt.trace.json.gz")
    os.symlink(outside / "cpu_ddp_2rank", root / "linked_dir")
    os.symlink(outside / DEFAULT_TRACE.name, root / "linked.pt.trace.json.gz")
    os.symlink("/etc", root / "etc")
    assert [r.label for r in discover_runs(root)] == ["mine.pt.trace.json.gz"]


def test_hidden_and_side_files_are_ignored(tmp_path: Path) -> None:
    shutil.copy(DEFAULT_TRACE, tmp_path / ".hidden.pt.trace.json.gz")
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "expected.json").write_text('{"avg": 1}')
    with pytest.raises(NoTraceFoundError):
        discover_runs(tmp_path)


def test_a_single_file_is_one_run(tmp_path: Path) -> None:
    f = tmp_path / "t.pt.trace.json.gz"
    shutil.copy(DEFAULT_TRACE, f)
    [run] = discover_runs(f)
    assert run.kind == "file" and run.path == f.resolve()


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        discover_runs(tmp_path / "nope")


def _ascend_db_export(run: Path, ranks: int = 2) -> Path:
    from tests.unit.ingest.test_hostile_sqlite import ASCEND_TASKS, ascend_db

    for r in range(ranks):
        out = run / f"rank{r}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        ascend_db(out / f"ascend_pytorch_profiler_{r}.db", ASCEND_TASKS, [(1, "AI_CORE")])
    return run


def test_an_ascend_database_export_is_a_run_as_analyze_reads_it(tmp_path: Path) -> None:
    """``serve`` finds the runs ``analyze`` reads: an export of ``ascend_pytorch_profiler_N.db`` files
    (no trace_view.json) was not listed; a directory holding ASCEND_PROFILER_OUTPUT alone is one too."""
    import stepscope

    exp = _ascend_db_export(tmp_path / "root" / "exp")
    solo = tmp_path / "root" / "solo" / "ASCEND_PROFILER_OUTPUT"
    solo.mkdir(parents=True)
    shutil.copy(exp / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db", solo)
    runs = discover_runs(tmp_path / "root")
    assert [(r.label, r.kind) for r in runs] == [("exp", "directory"), ("solo", "directory")]
    assert stepscope.load(runs[0].path, use_cache=False).rank_ids == [0, 1]


def test_an_ascend_export_linked_from_outside_is_not_served(tmp_path: Path) -> None:
    outside = _ascend_db_export(tmp_path / "outside", ranks=1)
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    shutil.copy(DEFAULT_TRACE, root / "mine.pt.trace.json.gz")
    os.symlink(outside / "rank0_ascend_pt", root / "run" / "rank0_ascend_pt")
    assert [r.label for r in discover_runs(root)] == ["mine.pt.trace.json.gz"]


def test_capture_traces_belong_to_their_run(tmp_path: Path) -> None:
    """A vLLM-style run: the replay trace and capture_traces/ beside it are one run; a capture_traces
    folder with no trace beside it is still a run of its own."""
    run = tmp_path / "vllm"
    (run / "capture_traces").mkdir(parents=True)
    shutil.copy(DEFAULT_TRACE, run / "graph_execution.json.gz")
    shutil.copy(DEFAULT_TRACE, run / "capture_traces" / "graph_capture_rank_0.1.pt.trace.json.gz")
    (tmp_path / "lone" / "capture_traces").mkdir(parents=True)
    shutil.copy(DEFAULT_TRACE, tmp_path / "lone" / "capture_traces" / "t.json.gz")
    assert [r.label for r in discover_runs(tmp_path)] == ["lone/capture_traces", "vllm"]


def test_each_run_says_when_it_was_recorded(tmp_path: Path) -> None:
    """The compare page's default BASE is the older run: ``before`` and ``after`` (the demo's runs) sort
    ``after`` first by name, but their ``tensorboard_trace_handler`` names say ``before`` was recorded
    first (ns in recent PyTorch, ms in older); a file named otherwise is dated by its modification time."""
    for label, name in (("after", "demo.1795834747104430741.pt.trace.json.gz"),
                        ("before", "demo.1795834742691802185.pt.trace.json.gz"),
                        ("old", "worker0.1623143089861.pt.trace.json.gz")):
        (tmp_path / label).mkdir()
        shutil.copy(DEFAULT_TRACE, tmp_path / label / name)
    loose = tmp_path / "loose.json.gz"
    shutil.copy(DEFAULT_TRACE, loose)
    os.utime(loose, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    runs = {r.label: r for r in discover_runs(tmp_path)}
    assert [r.label for r in sorted(runs.values(), key=lambda r: r.recorded_ns)] == ["old", "loose.json.gz", "before",
                                                                                       "after"]
    assert (runs["before"].recorded_ns, runs["before"].recorded_from) == (1795834742691802185, "file name")
    assert runs["old"].recorded_ns == 1623143089861 * 10**6
    assert (runs["loose.json.gz"].recorded_ns, runs["loose.json.gz"].recorded_from) == (1_700_000_000_123_456_789,
                                                                                        "file time")
