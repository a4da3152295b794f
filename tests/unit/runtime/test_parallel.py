"""``map_columns`` / ``concat_columns``: same answer as the plain serial numpy code, serially (small
tables) and on the thread pool (threshold forced to 0), with key order, fills and dtypes kept."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from stepscope.runtime import parallel
from stepscope.runtime.parallel import concat_columns, map_columns

POOL_PREFIX = "stepscope-col"


@pytest.fixture(params=["serial", "threads"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both paths: the real threshold with tiny tables (serial), or threshold 0 with 4 visible cores
    (threads, even on a 1-core machine) and a fresh pool that is shut down afterwards."""
    if request.param == "serial":
        yield "serial"
        return
    monkeypatch.setattr(parallel, "PARALLEL_ABOVE_CELLS", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(parallel, "_pool", None)
    yield "threads"
    if parallel._pool is not None:
        parallel._pool.shutdown(wait=True)


def _recording(seen: list[str], fn: Any) -> Any:
    """``fn`` that also records the name of the thread it ran on."""
    lock = threading.Lock()

    def wrapped(*args: Any) -> Any:
        with lock:
            seen.append(threading.current_thread().name)
        return fn(*args)

    return wrapped


def _check_ran_on(mode: str, seen: list[str], calls: int) -> None:
    assert len(seen) == calls
    if mode == "threads":
        assert all(name.startswith(POOL_PREFIX) for name in seen), seen
    else:
        assert seen == [threading.current_thread().name] * calls


def test_map_columns_equals_serial_numpy_and_keeps_order(mode: str) -> None:
    cols: dict[str, npt.NDArray[Any]] = {
        "z": np.array([10, 20, 30, 40, 50], np.int64),
        "a": np.array([0.5, 1.5, 2.5, 3.5, 4.5]),
        "m": np.array([True, False, True, False, True]),
        "k": np.array([7, 8, 9, 10, 11], np.int32),
    }
    rows = np.array([4, 0, 2])
    seen: list[str] = []
    got = map_columns(_recording(seen, lambda v: v[rows]), cols, 5)
    assert list(got) == ["z", "a", "m", "k"]
    np.testing.assert_array_equal(got["z"], [50, 10, 30])
    np.testing.assert_array_equal(got["a"], [4.5, 0.5, 2.5])
    np.testing.assert_array_equal(got["m"], [True, True, True])
    np.testing.assert_array_equal(got["k"], [11, 7, 9])
    assert [got[k].dtype for k in got] == [np.int64, np.float64, np.bool_, np.int32]
    _check_ran_on(mode, seen, 4)


def test_map_columns_many_columns_each_matched_to_its_own_key(mode: str) -> None:
    """With more columns than pool threads, each result must still land under its own key."""
    cols = {f"c{i}": np.arange(6, dtype=np.int64) + 100 * i for i in range(20)}
    got = map_columns(lambda v: v[::-1] * 2, cols, 6)
    assert list(got) == [f"c{i}" for i in range(20)]
    for i in range(20):
        np.testing.assert_array_equal(got[f"c{i}"], [2 * (100 * i + j) for j in (5, 4, 3, 2, 1, 0)])


def test_map_columns_int_keys_and_empty(mode: str) -> None:
    got = map_columns(lambda v: v + 1, {3: np.array([1, 2]), 1: np.array([5, 6])}, 2)
    assert list(got) == [3, 1]
    np.testing.assert_array_equal(got[3], [2, 3])
    np.testing.assert_array_equal(got[1], [6, 7])
    assert map_columns(lambda v: v, {}, 0) == {}


def test_concat_columns_equals_numpy_concatenate_with_fills(mode: str) -> None:
    parts: list[dict[str, npt.NDArray[Any]]] = [
        {"ts": np.array([1, 2, 3], np.int64), "dur": np.array([0.5, 1.0, 1.5]), "name": np.array([0, 1, 0], np.int32)},
        {"ts": np.array([4, 5], np.int64), "name": np.array([2, 2], np.int32)},  # no "dur"
        {"dur": np.array([9.0]), "ts": np.array([6], np.int64), "name": np.array([3], np.int32)},  # other key order
    ]
    filled: list[tuple[str, int]] = []

    def fill(name: str, n: int) -> npt.NDArray[Any]:
        filled.append((name, n))
        return np.full(n, -7.0)

    seen: list[str] = []
    got = concat_columns(parts, ["name", "ts", "dur"], _recording(seen, fill))
    assert list(got) == ["name", "ts", "dur"]
    np.testing.assert_array_equal(got["ts"], [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(got["name"], [0, 1, 0, 2, 2, 3])
    np.testing.assert_array_equal(got["dur"], [0.5, 1.0, 1.5, -7.0, -7.0, 9.0])
    assert (got["ts"].dtype, got["name"].dtype, got["dur"].dtype) == (np.int64, np.int32, np.float64)
    # filled once per column some part lacks (rows enough for the longest part, sliced per part)
    assert filled == [("dur", 3)]
    _check_ran_on(mode, seen, 1)


def test_concat_columns_fill_for_a_column_in_one_part_only(mode: str) -> None:
    """A column only the last part has: the earlier parts get fills of their own lengths, in order."""
    parts = [{"a": np.array([1, 2], np.int64)}, {"a": np.array([3], np.int64)},
             {"a": np.array([4, 5, 6], np.int64), "b": np.array([7, 8, 9], np.int32)}]

    def fill(name: str, n: int) -> npt.NDArray[Any]:
        return np.arange(n, dtype=np.int32) + (100 if name == "b" else 200)

    got = concat_columns(parts, ["b", "a"], fill)
    assert list(got) == ["b", "a"]
    np.testing.assert_array_equal(got["a"], [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(got["b"], [100, 101, 100, 7, 8, 9])
    assert got["b"].dtype == np.int32
    assert got["a"].dtype == np.int64


def test_concat_columns_only_named_columns(mode: str) -> None:
    parts = [{"a": np.array([1]), "x": np.array([9])}, {"a": np.array([2]), "x": np.array([8])}]
    got = concat_columns(parts, ["a"], lambda k, n: np.zeros(n))
    assert list(got) == ["a"]
    np.testing.assert_array_equal(got["a"], [1, 2])


def test_concat_columns_in_an_order_equals_concatenate_then_index(mode: str) -> None:
    parts = [{"a": np.array([10, 11, 12], np.int64), "b": np.array([1.0, 2.0, 3.0])},
             {"a": np.array([13, 14], np.int64)}]  # no "b": filled
    order = np.array([4, 0, 3, 2, 1], np.int64)
    got = concat_columns(parts, ["a", "b"], lambda k, n: np.full(n, -1.0), order)
    np.testing.assert_array_equal(got["a"], [14, 10, 13, 12, 11])
    np.testing.assert_array_equal(got["b"], [-1.0, 1.0, -1.0, 3.0, 2.0])
    assert got["a"].dtype == np.int64


def test_threads_used_only_above_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """rows * columns below PARALLEL_ABOVE_CELLS → the calling thread; at or above it → the pool."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(parallel, "_pool", None)
    monkeypatch.setattr(parallel, "PARALLEL_ABOVE_CELLS", 7)  # 2 columns x 3 rows = 6 < 7; x 4 rows = 8 >= 7
    seen: list[str] = []
    fn = _recording(seen, lambda v: v)
    map_columns(fn, {"a": np.zeros(3), "b": np.zeros(3)}, 3)
    assert seen == [threading.current_thread().name] * 2
    seen.clear()
    map_columns(fn, {"a": np.zeros(4), "b": np.zeros(4)}, 4)
    assert len(seen) == 2 and all(s.startswith(POOL_PREFIX) for s in seen), seen
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})  # one core: never threads
    seen.clear()
    map_columns(fn, {"a": np.zeros(4), "b": np.zeros(4)}, 4)
    assert seen == [threading.current_thread().name] * 2
    assert parallel._pool is not None
    parallel._pool.shutdown(wait=True)


def test_run_both_returns_both_results_in_order(mode: str) -> None:
    ran_on: dict[str, str] = {}

    def first() -> int:
        ran_on["first"] = threading.current_thread().name
        return 1

    def second() -> str:
        ran_on["second"] = threading.current_thread().name
        return "two"

    assert parallel.run_both(first, second, rows=10) == (1, "two")
    assert ran_on["first"] == threading.current_thread().name  # the first always runs here
    assert ran_on["second"].startswith(POOL_PREFIX) == (mode == "threads")


def test_run_both_raises_the_second_ones_error(mode: str) -> None:
    def boom() -> None:
        raise ValueError("bad link")

    with pytest.raises(ValueError, match="bad link"):
        parallel.run_both(lambda: 1, boom, rows=10)


def test_a_forked_child_runs_column_work_on_its_own_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the parent used the pool, a forked child (as ``stepscope diff`` makes) must not wait
    forever on the parent's copy of it, whose threads do not exist in the child."""
    monkeypatch.setattr(parallel, "PARALLEL_ABOVE_CELLS", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(parallel, "_pool", None)
    cols = {"a": np.arange(4), "b": np.arange(4) * 2}

    def slow_plus_one(v: npt.NDArray[Any]) -> npt.NDArray[Any]:
        time.sleep(0.05)  # long enough that every thread of the pool gets started
        return v + 1

    assert map_columns(slow_plus_one, {**cols, "c": cols["a"], "d": cols["b"]}, 4)["b"].tolist() == [1, 3, 5, 7]
    assert parallel._pool is not None and len(parallel._pool._threads) == 2  # all started, all idle now
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if the work finishes and is right
        import signal
        signal.alarm(10)  # a hang becomes a failure, not a stuck test run
        ok = map_columns(lambda v: v * 3, cols, 4)["a"].tolist() == [0, 3, 6, 9]
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_release_threads_while_other_threads_use_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """The web UI loads runs on several threads; one of them may fork a process pool (and release the
    column threads first) while the others are in the middle of column work."""
    monkeypatch.setattr(parallel, "PARALLEL_ABOVE_CELLS", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(parallel, "_pool", None)
    cols = {f"c{i}": np.arange(50) + i for i in range(6)}
    errors: list[BaseException] = []

    def user() -> None:
        try:
            for _ in range(30):
                out = map_columns(lambda v: v * 2, cols, 50)
                assert [int(out[f"c{i}"][1]) for i in range(6)] == [2 * (1 + i) for i in range(6)]
        except BaseException as exc:  # reported below, from the main thread
            errors.append(exc)

    users = [threading.Thread(target=user) for _ in range(3)]
    for t in users:
        t.start()
    for _ in range(30):
        parallel.release_threads()
    for t in users:
        t.join()
    assert errors == []
    parallel.release_threads()
    assert parallel._pool is None
