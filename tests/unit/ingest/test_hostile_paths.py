"""Paths that are neither a regular file nor a directory, and files that cannot be read (issue 21:
a FIFO, ``/dev/zero`` or ``<(zcat t.json.gz)`` raised NotADirectoryError; an unreadable file or
directory inside a run directory raised PermissionError from the sniffing, the cache key or
``layout.resolve``). A pipe is read as a stream; the rest is one line naming the file, exit code 2."""

from __future__ import annotations

import builtins
import gzip
import os
import pathlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.errors import TraceFormatError
from tests.builders import TraceBuilder, dumps
from tests.unit.ingest.helpers import assert_one_line_error
from tests.unit.ingest.test_bad_input import run_main

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")


def _trace_bytes(gz: bool = False) -> bytes:
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.launch_kernel("sgemm", 10, 2, 20, 5)
    data = dumps(b.document()).encode()
    return gzip.compress(data) if gz else data


def _fifo(tmp_path: Path, data: bytes, name: str = "pipe") -> Path:
    """A named pipe that a thread fills with ``data`` once opened (like ``<(zcat t.json.gz)``)."""
    path = tmp_path / name
    os.mkfifo(path)

    def feed() -> None:
        with open(path, "wb") as fh:
            fh.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return path


@needs_fifo
@pytest.mark.parametrize("gz", [False, True])
def test_a_pipe_is_read_as_a_stream(tmp_path: Path, gz: bool) -> None:
    path = _fifo(tmp_path, _trace_bytes(gz))
    trace = stepscope.load(path, use_cache=False)
    assert len(trace.events) == 3
    assert trace.source == str(path) and trace.ranks[0].source == str(path)
    assert not list(tmp_path.glob("stepscope-pipe-*"))


@needs_fifo
def test_a_pipe_of_junk_is_one_error_naming_the_pipe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _fifo(tmp_path, b"junk, not a trace")
    with pytest.raises(TraceFormatError) as info:
        stepscope.load(path, use_cache=False)
    assert str(info.value).startswith(f"{path}: ")
    path = _fifo(tmp_path, b"junk, not a trace", "pipe2")
    assert_one_line_error(run_main(["analyze", "--no-cache", str(path)], capsys), path)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TraceFormatError, match="character device"):
        stepscope.load("/dev/zero", use_cache=False)
    assert_one_line_error(run_main(["analyze", "/dev/zero"], capsys), Path("/dev/zero"))


# ---- files that cannot be read -------------------------------------------------------------------

def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for r in (0, 1):
        b = TraceBuilder(rank=r, world_size=2)
        b.step(1, 0, 100)
        b.write(run / f"worker{r}.json")
    return run


@pytest.fixture
def deny(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Paths added to the yielded set raise PermissionError when opened or listed (tests run as root,
    for whom file modes do not stop reads)."""
    denied: set[str] = set()
    real_open, real_iterdir, real_scandir = builtins.open, pathlib.Path.iterdir, os.scandir

    def check(path: Any) -> None:
        if os.fspath(path) in denied:
            raise PermissionError(13, "Permission denied", os.fspath(path))

    def fake_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)):
            check(file)
        return real_open(file, *args, **kwargs)

    def fake_iterdir(self: Path) -> Any:
        check(self)
        return real_iterdir(self)

    def fake_scandir(path: Any = ".") -> Any:
        check(path)
        return real_scandir(path)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(pathlib.Path, "iterdir", fake_iterdir)
    monkeypatch.setattr(os, "scandir", fake_scandir)
    yield denied


@pytest.mark.parametrize("use_cache", [True, False])  # the cache key reads the files first
def test_an_unreadable_rank_file_is_one_error_naming_it(tmp_path: Path, deny: set[str], use_cache: bool) -> None:
    run = _run_dir(tmp_path)
    deny.add(str(run / "worker1.json"))
    with pytest.raises(TraceFormatError) as info:
        stepscope.load(run, use_cache=use_cache)
    assert str(info.value) == f"{run / 'worker1.json'}: cannot read it (Permission denied)"


def test_an_unreadable_run_directory_is_one_error_naming_it(tmp_path: Path, deny: set[str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path)
    deny.add(str(run))
    with pytest.raises(TraceFormatError, match="Permission denied") as info:
        stepscope.load(run, use_cache=False)
    assert str(run) in str(info.value)
    assert_one_line_error(run_main(["analyze", "--no-cache", str(run)], capsys), run)


def test_an_unreadable_sqlite_sniff_is_one_error(tmp_path: Path, deny: set[str]) -> None:
    path = tmp_path / "trace.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    deny.add(str(path))
    with pytest.raises(TraceFormatError, match="Permission denied"):
        stepscope.load(path, use_cache=False)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="running as root: file modes do not stop reads (the monkeypatched tests above cover it)")
def test_chmod_000_rank_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path)
    (run / "worker1.json").chmod(0)
    try:
        assert_one_line_error(run_main(["analyze", str(run)], capsys), run / "worker1.json")
    finally:
        (run / "worker1.json").chmod(0o644)


def test_a_side_file_beside_the_traces_is_said_and_not_read(tmp_path: Path) -> None:
    """A run directory with a trace and a ``timing.json`` (a script's own timings, no events) beside it:
    the trace is read, the side file named in an info diagnostic; alone, a file with a trace's name is
    still read (and refused as what it is)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "host.pt.trace.json").write_bytes(_trace_bytes())
    (run / "timing.json").write_text('{"unprofiled_step_ms": [1.5, 1.4]}')
    trace = stepscope.load(run, use_cache=False)
    assert trace.rank_ids == [0] and trace.event_count > 0
    side = [d for d in trace.diagnostics if d.name == "side-file"]
    assert len(side) == 1 and side[0].severity == "info" and side[0].source == str(run / "timing.json")
    (run / "host.pt.trace.json").unlink()
    with pytest.raises(TraceFormatError, match="traceEvents"):
        stepscope.load(run, use_cache=False)


def test_a_fragment_after_the_last_cycle_is_not_the_default_span(tmp_path: Path) -> None:
    """A profiler schedule without ``repeat`` stopped mid-cycle writes a last, tiny trace: the default span is
    the latest one that is not such a fragment (and the diagnostic says why); ``--span`` still picks any."""
    run = tmp_path / "run"
    run.mkdir()
    big, small = TraceBuilder(), TraceBuilder()
    for i in range(3):
        big.step(i + 1, i * 100, 100)
        big.launch_kernel("sgemm", i * 100 + 10, 2, i * 100 + 20, 50)
    small.step(4, 1_000, 10)
    (run / "host_1.1000.pt.trace.json").write_text(dumps(big.document()))
    (run / "host_1.2000.pt.trace.json").write_text(dumps(small.document()))
    trace = stepscope.load(run, use_cache=False)
    assert trace.event_count > 4 * len(small.events)
    (note,) = [d for d in trace.diagnostics if d.name == "multiple-spans"]
    assert "showing span 1000" in note.example and "the later span holds under 50% of its bytes" in note.example
    assert stepscope.load(run, use_cache=False, span=2).event_count < trace.event_count
