"""Cache entries written on a thread inside ``deferred_cache_writes`` (one-shot CLI commands), and
before ``load`` returns anywhere else."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

import stepscope
from stepscope.runtime.deferred import deferred_cache_writes, write_entry
from stepscope.runtime.pool import fork_pool
from tests.builders import TraceBuilder


def test_outside_the_block_the_write_is_done_here() -> None:
    where: list[str] = []
    write_entry(lambda: where.append(threading.current_thread().name), "x")
    assert where == [threading.current_thread().name]


def test_inside_the_block_the_write_runs_on_a_thread_and_the_block_waits_for_it() -> None:
    release = threading.Event()
    where: list[str] = []

    def write() -> None:
        assert release.wait(5)
        where.append(threading.current_thread().name)

    with deferred_cache_writes():
        write_entry(write, "x")
        assert where == []  # not written yet: the caller goes on
        release.set()
    assert where == ["stepscope-cache-write"]  # the block's end waited for it


def test_a_failed_write_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def fail() -> None:
        raise OSError("disk full")

    with caplog.at_level(logging.INFO), deferred_cache_writes():
        write_entry(fail, "entry-x")
    assert "could not write cache entry-x: disk full" in caplog.text


def test_load_in_the_block_leaves_the_entry_written_at_its_end(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(cache))
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=2, launch_dur=1, ts=10, dur=10)
    path = b.write(tmp_path / "t.json")
    with deferred_cache_writes():
        trace = stepscope.load(path)
    entries = [p for p in cache.iterdir() if (p / "meta.json").exists()]
    assert len(entries) == 1
    again = stepscope.load(path)
    assert again.event_count == trace.event_count and again.strings.strings == trace.strings.strings


def _write_slowly(path: str) -> str:
    def write() -> None:
        time.sleep(0.3)  # the worker has returned its result by now, unless it writes before going on
        Path(path).write_text("written")

    write_entry(write, path)
    return threading.current_thread().name


def test_a_process_forked_inside_the_block_writes_before_going_on(tmp_path: Path) -> None:
    """``stepscope diff`` loads each side in a forked worker inside the CLI's block: the worker
    inherits the block but not its end, so a write left to a thread there would be cut off."""
    target = tmp_path / "entry"
    with deferred_cache_writes(), fork_pool(1, None, None) as pool:
        pool.submit(_write_slowly, str(target)).result()
    assert target.read_text() == "written"
