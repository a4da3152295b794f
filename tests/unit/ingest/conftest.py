"""Make ``tests.builders`` / ``tests.corpus`` importable when pytest is run without ``python -m``; the
cache fixtures of the cache tests."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import stepscope.ingest as ingest  # noqa: E402
from stepscope.model.trace import Trace  # noqa: E402


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(d))
    return d


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every real parse (a cache hit does not parse)."""
    calls: list[str] = []
    real: Callable[..., Trace] = ingest._parse

    def counting(*args: Any, **kwargs: Any) -> Trace:
        calls.append(str(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest, "_parse", counting)
    return calls
