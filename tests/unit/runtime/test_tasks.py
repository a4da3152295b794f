"""Independent calls on threads (``runtime/tasks.py``) and the memo they share (``analysis/_memo.py``)."""

from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import Future
from contextvars import ContextVar
from pathlib import Path

import pytest

from stepscope.analysis._memo import Memo
from stepscope.runtime import tasks
from stepscope.runtime.tasks import run_calls

_WHO: ContextVar[str] = ContextVar("who", default="nobody")


def test_outcomes_in_call_order_with_values_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "usable_cores", lambda: 2)
    calls = [lambda: 1, lambda: int("x"), lambda: 3]
    for parallel in (False, True):
        got = run_calls(calls, parallel)
        assert [g.value for g in got] == [1, None, 3]
        assert got[0].error is None and isinstance(got[1].error, ValueError) and got[2].error is None


def test_parallel_calls_run_on_threads_in_the_callers_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "usable_cores", lambda: 2)
    both = threading.Barrier(2, timeout=5)  # passes only if the two calls run at the same time

    def call() -> tuple[str, str]:
        both.wait()
        return threading.current_thread().name, _WHO.get()

    token = _WHO.set("caller")
    try:
        got = run_calls([call, call], parallel=True)
    finally:
        _WHO.reset(token)
    assert [g.error for g in got] == [None, None]
    assert all(g.value is not None and g.value[0].startswith("stepscope-analysis") and g.value[1] == "caller"
               for g in got)
    assert run_calls([lambda: threading.current_thread().name], parallel=False)[0].value == \
        threading.current_thread().name  # not parallel: here


def test_a_pass_asked_for_by_two_threads_at_once_is_computed_once(tmp_path: object) -> None:
    memo = Memo()
    computed: list[int] = []
    started = threading.Event()

    def slow() -> list[int]:
        started.set()
        time.sleep(0.2)  # the second thread asks meanwhile
        computed.append(1)
        return [len(computed)]

    trace = object()
    values: list[object] = []

    def ask() -> None:
        values.append(memo.get("slow", trace, 0, slow))  # type: ignore[arg-type]

    first = threading.Thread(target=ask)
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=ask)
    second.start()
    first.join()
    second.join()
    assert computed == [1] and values[0] is values[1] == [1]


def test_an_interrupted_wait_drops_the_calls_not_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while waiting: the calls still queued never run (the running ones finish)."""
    monkeypatch.setattr(tasks, "usable_cores", lambda: 2)
    ran: list[int] = []
    release = threading.Event()

    def slow(i: int) -> int:
        release.wait(5)
        ran.append(i)
        return i

    calls = [functools.partial(slow, i) for i in range(6)]  # two run at once, four wait in the queue

    def interrupted(self: Future[object], timeout: float | None = None) -> object:
        threading.Timer(0.2, release.set).start()  # the running two finish a little after the interrupt
        raise KeyboardInterrupt

    monkeypatch.setattr(Future, "result", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_calls(calls, parallel=True)
    assert sorted(ran) == [0, 1]


def test_memory_available_is_read_from_meminfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:    2048 kB\n")
    monkeypatch.setattr(tasks, "MEMINFO", str(info))
    assert tasks.memory_available_bytes() == 2048 * 1024
    assert tasks.memory_to_spare(1024 * 1024) and not tasks.memory_to_spare(3 * 1024 * 1024)
    monkeypatch.setattr(tasks, "MEMINFO", str(tmp_path / "absent"))
    assert tasks.memory_available_bytes() is None and tasks.memory_to_spare(1 << 60)  # unknown: not in the way
