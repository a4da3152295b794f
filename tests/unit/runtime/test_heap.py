"""``heap_for_big_arrays``: glibc's thresholds raised by the first block, set back (and the heap
trimmed) by the last, nested and threaded blocks included."""

from __future__ import annotations

import subprocess
import sys
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


#: a thread makes and drops two 40 MiB arrays at once, eight times, inside the heap mode; prints the
#: page faults of the first time and of all eight (a thread's own arena has heaps of at most 64 MiB:
#: the second array takes a new heap, unmapped again when it is freed)
_THREAD_FAULTS = """
import resource, sys, threading
if sys.argv[1] == "cli":
    import stepscope.cli  # what the command line does first, before numpy starts its threads
import numpy as np
from stepscope.runtime import heap
from stepscope.runtime.hugepages import without_hugepage_hint
faults = []
def work():
    for _ in range(8):
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        a = np.ones(5 << 20)
        b = a + 1
        faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
        del a, b
with heap.heap_for_big_arrays(), without_hugepage_hint():
    t = threading.Thread(target=work)
    t.start()
    t.join()
print(faults[0], sum(faults))
"""


@pytest.mark.skipif(heap._libc() is None or not hasattr(__import__("resource"), "RUSAGE_THREAD"),
                    reason="glibc's arenas and per-thread page-fault counts (Linux) only")
def test_the_command_lines_threads_reuse_the_heap() -> None:
    def faults(mode: str) -> tuple[int, int]:
        out = subprocess.run([sys.executable, "-c", _THREAD_FAULTS, mode], capture_output=True, text=True,
                             check=True, timeout=60).stdout.split()
        return int(out[0]), int(out[1])

    first, total = faults("cli")
    assert first > 15000  # 80 MiB of fresh 4 KiB pages, faulted in once ...
    assert total < 1.5 * first  # ... then the freed arrays are the next ones' memory
    first, total = faults("own arena")
    assert total > 4 * first  # a thread's own arena maps and unmaps the second array's heap each time
