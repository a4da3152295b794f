"""``heap_for_big_arrays``: glibc's thresholds raised by the first block, set back (and the heap
trimmed) by the last, nested and threaded blocks included."""

from __future__ import annotations

import threading

import pytest

from stepscope.runtime import heap


class _FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("trim", pad, 0))
        return 1


def test_nested_blocks_set_once_and_restore_once(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = _FakeLibc()
    monkeypatch.setattr(heap, "_libc", lambda: libc)
    with heap.heap_for_big_arrays():
        with heap.heap_for_big_arrays():
            assert libc.calls == [("mallopt", heap._M_MMAP_THRESHOLD, 1 << 30),
                                  ("mallopt", heap._M_TRIM_THRESHOLD, (1 << 31) - 1)]
        assert len(libc.calls) == 2  # the inner block's end leaves the outer one's settings alone
    assert libc.calls[2:] == [("mallopt", heap._M_MMAP_THRESHOLD, heap._DEFAULT_BYTES),
                              ("mallopt", heap._M_TRIM_THRESHOLD, heap._DEFAULT_BYTES), ("trim", 0, 0)]


def test_threads_share_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = _FakeLibc()
    monkeypatch.setattr(heap, "_libc", lambda: libc)
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with heap.heap_for_big_arrays():
            inside.set()
            leave.wait(5)

    t = threading.Thread(target=other)
    with heap.heap_for_big_arrays():
        t.start()
        inside.wait(5)
    assert not any(c[0] == "trim" for c in libc.calls)  # the other thread's block is still open
    leave.set()
    t.join(5)
    assert [c[0] for c in libc.calls].count("trim") == 1 and heap._SETTING.inside == 0


def test_without_glibc_it_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_libc", lambda: None)
    with heap.heap_for_big_arrays():
        assert heap._SETTING.inside == 0


def test_cli_keeps_glibc_defaults_for_long_running_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.cli import _heap_mode

    libc = _FakeLibc()
    monkeypatch.setattr(heap, "_libc", lambda: libc)
    for argv in (["serve", "runs/"], ["--verbose", "mcp"], ["run", "--", "python", "train.py"]):
        with _heap_mode(argv):
            assert libc.calls == []
    with _heap_mode(["report", "t.json", "-o", "r.html"]):
        assert len(libc.calls) == 2  # analyze, report ...: big arrays from the heap
