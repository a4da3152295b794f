"""``usable_cores``: the affinity where the OS has one, the machine's count where it has not."""

from __future__ import annotations

import os

import pytest

from stepscope.runtime.cores import usable_cores


def test_the_affinity_where_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 3, 5}, raising=False)
    assert usable_cores() == 3


def test_the_machines_count_without_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS and Windows have no ``os.sched_getaffinity``."""
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert usable_cores() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert usable_cores() == 1
