"""The served directory and client the web UI tests share (small real traces, copied, never linked)."""

from __future__ import annotations

import shutil
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="starlette (a dependency of stepscope) is not installed")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx (dev extra)")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette >= 1.0 announces a move away from httpx in its TestClient
    from starlette.testclient import TestClient

from stepscope.server.app import create_app
from stepscope.server.store import RunStore

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"
DEFAULT_TRACE = REPO / "stepscope" / "data" / "default_trace.pt.trace.json.gz"
SHARED_TRACES = REPO.parent / "shared" / "traces"


def make_served_dir(root: Path) -> Path:
    """cpu_ddp_2rank (2 ranks), the embedded sample (a loose file) and the H100 base / fixed pair."""
    shutil.copytree(DATA / "cpu_ddp_2rank", root / "cpu_ddp_2rank")
    shutil.copy(DEFAULT_TRACE, root / DEFAULT_TRACE.name)
    shutil.copytree(DATA / "h100_cuda_train" / "base", root / "h100" / "base")
    shutil.copytree(DATA / "h100_cuda_train" / "fixed", root / "h100" / "fixed")
    return root


def client_for(store: RunStore, **kw: Any) -> TestClient:
    """A TestClient speaking to the app as a browser on the loopback address would."""
    return TestClient(create_app(store, **kw), base_url="http://127.0.0.1:8123", raise_server_exceptions=False)


@contextmanager
def serving(app: Any, **config: Any) -> Iterator[str]:
    """uvicorn with ``stepscope serve``'s configuration (``config`` overrides it, e.g. the request
    deadline) in a thread, on a socket bound to 127.0.0.1:0; yields the base URL without the slash."""
    import uvicorn

    from stepscope.server.protocol import server_config
    from stepscope.server.serve import bind, url_of

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(server_config(app, **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield url_of(sock, "127.0.0.1").rstrip("/")
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
