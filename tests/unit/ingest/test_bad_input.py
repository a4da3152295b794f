"""Bad input (SPEC §11): every broken file of the corpus gives a clear one-line error or a counted
repair, never a crash or a hang, and the input is never modified.

The corpus (``tests/corpus.py``) is generated from a real trace; each case is checked twice:
with ``stepscope.load`` (the exception type, the diagnostics, the time, the input untouched) and
through the CLI (``stepscope analyze``: exit code 2 and one line naming the file, or exit code 0;
never a traceback). The CLI runs in a fresh ``python -m stepscope`` process for one case of each
kind and for every case that crashes today; the rest call the same entry point
(``stepscope.cli.main``) in-process, which keeps the suite fast.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import stepscope
from stepscope.cli import main
from stepscope.errors import NoTraceFoundError, StepscopeError, UsageError
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from tests.corpus import (
    SPECS,
    TB_LAYOUT,
    Case,
    Spec,
    base_event_count,
    base_source,
    generate,
    no_trace_dir,
    ranks_dir_missing_one,
    shared_traces_missing_reason,
    tb_handler_dir,
)
from tests.unit.ingest.helpers import CliResult, assert_one_line_error, fingerprint, run_cli

MAX_SECONDS = 5.0  # "no hang": one case, in-process


#: cases run through a fresh ``python -m stepscope`` process (one per kind of outcome, and every case
#: that crashes today); the others run the same entry point, ``stepscope.cli.main``, in-process
CLI_SUBPROCESS = ("empty.json", "gzip_magic_junk.json.gz", "truncated_50pct.json.gz")


def _param(spec: Spec, cli: bool = False) -> object:
    bug = spec.known_bug and (spec.bug_crashes or not cli)
    marks = [pytest.mark.xfail(reason=f"bug: {spec.known_bug}", strict=True)] if bug else []
    return pytest.param(spec, id=spec.name, marks=marks)


def _in_subprocess(spec: Spec) -> bool:
    return spec.name in CLI_SUBPROCESS or (bool(spec.known_bug) and spec.bug_crashes)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    reason = shared_traces_missing_reason()
    if reason is not None:
        pytest.skip(reason)
    return {c.name: c for c in generate(tmp_path_factory.mktemp("corpus"))}


@pytest.fixture(scope="module")
def base_events() -> int:
    return base_event_count(base_source().doc)


@pytest.fixture(scope="module")
def cli_runs(corpus: dict[str, Case], tmp_path_factory: pytest.TempPathFactory) -> dict[str, CliResult]:
    """``stepscope analyze FILE`` in a fresh process, concurrently, for the CLI_SUBPROCESS cases."""
    cache = tmp_path_factory.mktemp("cli-cache")
    chosen = {name: c for name, c in corpus.items() if _in_subprocess(c.spec)}
    before = {name: fingerprint(c.path) for name, c in chosen.items()}
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run_cli, "analyze", str(c.path), cache_dir=cache)
                   for name, c in chosen.items()}
        results = {name: f.result() for name, f in futures.items()}
    for name, c in chosen.items():
        assert fingerprint(c.path) == before[name], f"the CLI modified its input {c.path}"
    return results


def _diag_counts(trace: Trace) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in trace.diagnostics:
        out[d.name] = out.get(d.name, 0) + d.count
    return out


@pytest.mark.parametrize("spec", [_param(s) for s in SPECS])
def test_load_gives_clear_error_or_counted_repair(spec: Spec, corpus: dict[str, Case], base_events: int) -> None:
    case = corpus[spec.name]
    before = fingerprint(case.path)
    t0 = time.perf_counter()
    trace: Trace | None = None
    try:
        trace = stepscope.load(case.path)  # with the cache: writing it must not touch the input either
    except StepscopeError as exc:
        assert spec.expect in ("error", "any"), f"{spec.name} should load, got: {exc}"
        msg = str(exc)
        assert "\n" not in msg, f"error message is not one line: {msg!r}"
        assert case.path.name in msg, f"error does not name the file: {msg}"
    seconds = time.perf_counter() - t0
    assert fingerprint(case.path) == before, "load modified its input"
    assert seconds < MAX_SECONDS, f"{spec.name} took {seconds:.1f} s"
    if trace is None:
        return
    assert spec.expect in ("load", "any"), f"{spec.name} should be a StepscopeError, it loaded"
    counts = _diag_counts(trace)
    for name in spec.diagnostics:
        assert counts.get(name, 0) >= 1, f"diagnostic {name!r} not reported; got {counts}"
    if spec.expect == "any":
        assert counts, "a broken file loaded without any diagnostic"
    if spec.lost_at_most is not None:
        assert len(trace.events) >= base_events - spec.lost_at_most, (
            f"kept {len(trace.events)} of {base_events} events; at most {spec.lost_at_most} may be dropped")


@pytest.mark.parametrize("spec", [_param(s, cli=True) for s in SPECS if _in_subprocess(s)])
def test_cli_one_line_error_or_success(spec: Spec, corpus: dict[str, Case], cli_runs: dict[str, CliResult]) -> None:
    case, res = corpus[spec.name], cli_runs[spec.name]
    assert "Traceback" not in res.stderr, res.stderr
    assert res.seconds < 30, f"the CLI took {res.seconds:.1f} s"
    if spec.expect == "error" or (spec.expect == "any" and res.returncode != 0):
        assert_one_line_error(res, case.path)
    else:
        assert res.returncode == 0, f"exit code {res.returncode}:\n{res.stderr}"
        assert res.stdout.strip(), "analyze printed nothing"


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> CliResult:
    """The console script's entry point in-process; an uncaught exception fails the test as a crash."""
    code = 0
    t0 = time.perf_counter()
    try:
        main(args)
    except SystemExit as exc:
        code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
    out, err = capsys.readouterr()
    return CliResult(code, out, err, time.perf_counter() - t0)


@pytest.mark.parametrize("spec", [_param(s, cli=True) for s in SPECS if not _in_subprocess(s)])
def test_cli_main_in_process(spec: Spec, corpus: dict[str, Case], capsys: pytest.CaptureFixture[str]) -> None:
    """Error cases: exit 2 and one line naming the file; load cases: exit 0 and a summary."""
    case = corpus[spec.name]
    before = fingerprint(case.path)
    res = run_main(["analyze", "--no-cache", str(case.path)], capsys)
    assert fingerprint(case.path) == before
    if spec.expect == "error" or (spec.expect == "any" and res.returncode != 0):
        assert_one_line_error(res, case.path)
    else:
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip(), "analyze printed nothing"


def test_sql_command_maps_errors_too(corpus: dict[str, Case], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli("sql", str(corpus["empty.json"].path), "SELECT count(*) FROM events", cache_dir=tmp_path)
    assert_one_line_error(res, corpus["empty.json"].path)
    for name in ("binary_junk.json", "gzip_magic_junk.json.gz", "truncated_1pct.json"):
        res = run_main(["sql", "--no-cache", str(corpus[name].path), "SELECT count(*) FROM events"], capsys)
        if corpus[name].spec.expect == "error":
            assert_one_line_error(res, corpus[name].path)
        else:
            assert res.returncode == 0 and res.stdout.strip(), res.stderr


# ---- cases with more to check than "error or diagnostics" -------------------------------------

def test_truncated_loads_keep_what_precedes_the_cut(corpus: dict[str, Case]) -> None:
    """Longer cuts keep more: the salvage is monotonic in the cut point."""
    kept = [len(stepscope.load(corpus[f"truncated_{t}.json"].path, use_cache=False).events)
            for t in ("1pct", "10pct", "50pct", "90pct", "99_9pct")]
    assert kept == sorted(kept) and kept[0] > 0, kept
    for t in ("1pct", "50pct", "99_9pct"):  # gzip of the same bytes: the same events
        plain = stepscope.load(corpus[f"truncated_{t}.json"].path, use_cache=False)
        gz = stepscope.load(corpus[f"truncated_{t}.json.gz"].path, use_cache=False)
        assert len(plain.events) == len(gz.events)


def test_begin_end_pair_is_paired_or_counted(corpus: dict[str, Case]) -> None:
    trace = stepscope.load(corpus["begin_end_pair.json"].path, use_cache=False)
    names = set(trace.names(trace.events["name"]).tolist())
    paired = "stepscope_test::b_e_pair" in names
    counted = sum(d.count for d in trace.diagnostics if "b-e" in d.name or "begin" in d.name)
    assert paired or counted == 2, f"B/E events neither paired nor counted: {_diag_counts(trace)}"


def test_missing_device_properties_still_reads_gpu_work(corpus: dict[str, Case]) -> None:
    trace = stepscope.load(corpus["no_device_properties.json"].path, use_cache=False)
    full = stepscope.load(corpus["overlap_on_thread.json"].path, use_cache=False)  # same events + 1 op
    assert trace.ranks[0].devices == ()
    assert len(full.ranks[0].devices) == 8
    kernels = int(trace.kind_mask(EventKind.KERNEL).sum())
    assert kernels == int(full.kind_mask(EventKind.KERNEL).sum()) == 245
    assert not [d for d in trace.diagnostics if d.severity == "error"]


def test_overlap_is_nested_not_lost(corpus: dict[str, Case]) -> None:
    trace = stepscope.load(corpus["overlap_on_thread.json"].path, use_cache=False)
    names = trace.names(trace.events["name"])
    rows = (names == "stepscope_test::overlapping").nonzero()[0]
    assert len(rows) == 1
    assert trace.events["dur_ns"][rows[0]] > 0


def test_bare_list_equals_the_object_form(corpus: dict[str, Case], base_events: int) -> None:
    trace = stepscope.load(corpus["bare_list.json"].path, use_cache=False)
    assert len(trace.events) == base_events
    assert int(trace.kind_mask(EventKind.KERNEL).sum()) == 245


# ---- directories -------------------------------------------------------------------------------

def _needs_traces() -> None:
    reason = shared_traces_missing_reason()
    if reason is not None:
        pytest.skip(reason)


def test_directory_without_trace(tmp_path: Path) -> None:
    d = no_trace_dir(tmp_path)
    with pytest.raises(NoTraceFoundError) as info:
        stepscope.load(d)
    assert d.name in str(info.value)
    assert_one_line_error(run_cli("analyze", str(d), cache_dir=tmp_path), d)


def test_run_directory_with_a_rank_missing(tmp_path: Path) -> None:
    _needs_traces()
    d = ranks_dir_missing_one(tmp_path, missing=3)
    before = fingerprint(d)
    trace = stepscope.load(d)
    assert fingerprint(d) == before
    assert trace.rank_ids == [0, 1, 2, 4, 5, 6, 7]
    assert {r.world_size for r in trace.ranks} == {8}
    assert not [x for x in trace.diagnostics if x.severity == "error"], trace.diagnostics


def _span_files(trace: Trace) -> set[str]:
    return {Path(r.source).name for r in trace.ranks}


def _expected(span: int) -> set[str]:
    return {f"{w}.{ts}.pt.trace.json.gz" for (w, s), ts in TB_LAYOUT.items() if s == span}


def test_tensorboard_handler_dir_span_selection(tmp_path: Path) -> None:
    _needs_traces()
    d = tb_handler_dir(tmp_path)
    before = fingerprint(d)
    latest = stepscope.load(d)
    assert _span_files(latest) == _expected(2), "default span must be the latest"
    assert latest.rank_ids == [0, 1]
    assert {r.span for r in latest.ranks} == {TB_LAYOUT[("worker0", 2)]}
    assert any(x.name == "multiple-spans" for x in latest.diagnostics)
    first = stepscope.load(d, span=1)
    assert _span_files(first) == _expected(1), "span=1 must be the earliest"
    assert first.rank_ids == [0, 1]
    assert _span_files(stepscope.load(d, span=2)) == _expected(2)
    assert _span_files(stepscope.load(d, span=TB_LAYOUT[("worker0", 1)])) == _expected(1)
    for bad in (0, 3, "3", "1700000000999"):
        with pytest.raises(UsageError) as info:
            stepscope.load(d, span=bad)
        assert d.name in str(info.value)
    assert fingerprint(d) == before


def test_tensorboard_handler_dir_bad_span_on_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _needs_traces()
    d = tb_handler_dir(tmp_path)
    assert_one_line_error(run_cli("analyze", str(d), "--span", "3", cache_dir=tmp_path), d)
    assert_one_line_error(run_main(["analyze", str(d), "--span", "1700000000999"], capsys), d)
    ok = run_main(["analyze", "--no-cache", str(d), "--span", "1"], capsys)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize(("name", "said"), [("run.nsys-rep", "nsys export --type sqlite"),
                                            ("old.qdrep", "nsys export --type sqlite"),
                                            ("kernels.ncu-rep", "Nsight Compute"),
                                            ("blob.bin", "not a JSON trace")])
def test_files_of_other_tools_say_what_to_pass(tmp_path: Path, name: str, said: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\x00\x01NSYS-like binary report")
    with pytest.raises(StepscopeError, match=said):
        stepscope.load(path, use_cache=False)
