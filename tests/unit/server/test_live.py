"""A real server on 127.0.0.1 (random port): concurrent clients, and the ``stepscope serve`` command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stepscope.server.app import LOOPBACK_HOSTS, create_app
from stepscope.server.discover import discover_runs
from stepscope.server.serve import is_loopback
from stepscope.server.store import RunStore

uvicorn = pytest.importorskip("uvicorn")

WORKERS = 20
ROUNDS = 40  # each worker walks the request list this many times
TIME_LIMIT_S = 120.0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """uvicorn as ``stepscope serve`` runs it, on 127.0.0.1:0, runs analysed lazily (cold start)."""
    from tests.unit.server.served import make_served_dir, serving

    root = make_served_dir(tmp_path_factory.mktemp("live"))
    os.environ.setdefault("STEPSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    with serving(create_app(RunStore(discover_runs(root)), allowed_hosts=LOOPBACK_HOSTS)) as url:
        yield url


def _get(url: str) -> tuple[int, float]:
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            r.read()
            code = r.status
    except urllib.error.HTTPError as e:
        code = e.code
    return code, time.perf_counter() - t0


def test_twenty_concurrent_clients(live: str) -> None:
    with urllib.request.urlopen(live + "/api/v1/runs", timeout=10) as r:
        runs = {x["label"]: x["id"] for x in json.load(r)["runs"]}
    base, fixed, ddp = runs["h100/base"], runs["h100/fixed"], runs["cpu_ddp_2rank"]
    paths = ["/", "/static/app.js", "/api/v1/runs", f"/api/v1/runs/{ddp}?rank=1", f"/api/v1/runs/{base}/findings",
             f"/api/v1/runs/{base}/memory?rank=0", f"/api/v1/runs/{fixed}/info",
             f"/api/v1/diff?base={base}&new={fixed}",
             f"/api/v1/runs/{base}/timeline?rank=0&max_items=300", "/api/v1/runs/zzz", "/static/../etc/passwd"]
    expected = {p: 404 if p in ("/api/v1/runs/zzz", "/static/../etc/passwd") else 200 for p in paths}
    urls = [live + p for p in paths] * ROUNDS
    t0 = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(_get, urls))
    wall = time.perf_counter() - t0
    codes = [c for c, _ in results]
    lat = sorted(d for _, d in results)
    p50, p99 = lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3
    print(f"\n{len(urls)} requests, {WORKERS} threads: {wall:.2f} s wall, {len(urls) / wall:.0f} req/s, "
          f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {lat[-1] * 1e3:.0f} ms")
    assert codes == [expected[p] for p in paths] * ROUNDS
    assert wall < TIME_LIMIT_S
    assert _get(live + "/api/v1/health")[0] == 200  # still up


def test_serve_command_binds_loopback_and_prints_its_url(tmp_path: Path) -> None:
    from tests.unit.server.served import DEFAULT_TRACE

    (tmp_path / DEFAULT_TRACE.name).write_bytes(DEFAULT_TRACE.read_bytes())
    proc = subprocess.Popen([sys.executable, "-m", "stepscope", "serve", str(tmp_path), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "STEPSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert m, line
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                assert _get(m.group(1) + "api/v1/health")[0] == 200
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert _get(m.group(1) + "api/v1/runs")[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(15)


def test_non_loopback_bind_warns_loudly(tmp_path: Path) -> None:
    from stepscope.server.serve import not_loopback_warning

    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and is_loopback("::1")
    assert is_loopback("localhost") and is_loopback("127.0.0.2")
    assert "WARNING" in not_loopback_warning("0.0.0.0") and "no authentication" in not_loopback_warning("0.0.0.0")


def test_missing_web_extra_prints_the_install_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import builtins

    from click.testing import CliRunner

    from stepscope.cli import cli

    real = builtins.__import__

    def no_web(name: str, *a: object, **k: object) -> object:
        if name in ("starlette", "uvicorn"):
            raise ImportError(name)
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_web)
    res = CliRunner().invoke(cli, ["serve", str(tmp_path), "--no-browser"], standalone_mode=False)
    assert res.exception is not None and "pip install starlette uvicorn" in str(res.exception)
