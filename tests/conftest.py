"""Shared test setup: every test gets its own cache directory; real traces are found beside the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def shared_traces() -> Path:
    """/work/shared/traces (the real traces); skips the test when that folder is absent."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"real traces not found at {SHARED_TRACES}")
    return SHARED_TRACES
