"""Fixtures for the web UI tests: a served directory of small real traces and a TestClient on it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from stepscope.server.discover import discover_runs  # noqa: E402
from stepscope.server.store import RunStore  # noqa: E402
from tests.unit.server.served import TestClient, client_for, make_served_dir  # noqa: E402


@pytest.fixture(scope="session")
def served_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_served_dir(tmp_path_factory.mktemp("served"))


@pytest.fixture(scope="session")
def store(served_dir: Path) -> RunStore:
    return RunStore(discover_runs(served_dir))


@pytest.fixture(scope="session")
def client(store: RunStore) -> Iterator[TestClient]:
    with client_for(store) as c:
        yield c


@pytest.fixture(scope="session")
def ids(client: TestClient) -> dict[str, str]:
    """Run label → id, from the runs list (the only way a client learns ids)."""
    return {r["label"]: r["id"] for r in client.get("/api/v1/runs").json()["runs"]}
