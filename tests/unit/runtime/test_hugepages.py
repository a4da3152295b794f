"""``without_hugepage_hint``: numpy's huge-page hint is off inside, back as it was after the last block."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import stepscope
from stepscope.runtime import hugepages
from stepscope.runtime.hugepages import without_hugepage_hint
from tests.builders import TraceBuilder


def _getter() -> Callable[[], bool]:
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            fn = getattr(importlib.import_module(module), "_get_madvise_hugepage", None)
        except ImportError:
            continue
        if callable(fn):
            return fn  # type: ignore[no-any-return]
    pytest.skip("this numpy has no huge-page hint to switch")


def test_hint_off_inside_and_restored_after() -> None:
    hint = _getter()
    before = hint()
    with without_hugepage_hint():
        assert hint() is False
        with without_hugepage_hint():
            assert hint() is False
        assert hint() is False  # the outer block is still open
    assert hint() is before


def test_overlapping_blocks_on_threads_restore_once_the_last_ends() -> None:
    hint = _getter()
    before = hint()
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with without_hugepage_hint():
            entered.set()
            release.wait(5)

    t = threading.Thread(target=other)
    with without_hugepage_hint():
        t.start()
        assert entered.wait(5)
    assert hint() is False  # the other thread's block is still open
    release.set()
    t.join(5)
    assert hint() is before and hugepages._SETTING.inside == 0


def test_load_runs_without_the_hint_and_restores_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hint = _getter()
    before = hint()
    seen: list[bool] = []
    real = stepscope.ingest._parse

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(hint())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stepscope.ingest, "_parse", spy)
    b = TraceBuilder()
    b.op("A", 0, 10)
    stepscope.load(b.write(tmp_path / "t.json"), use_cache=False)
    assert seen == [False] and hint() is before
