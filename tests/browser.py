"""Headless Chromium for the browser tests: Debian's chromium driven by Playwright (never downloaded)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync"]


def need_playwright() -> Any:
    """Playwright's sync API, or a skip saying how to install what is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: run scripts/setup_browser.sh (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed in this venv: run scripts/setup_browser.sh")
    return sync_playwright


def launch() -> Iterator[Any]:
    """One headless Chromium (for a module-scoped fixture: the sync API allows one Playwright at a time)."""
    with need_playwright()() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def record(page: Any, errors: list[str], requests: list[str]) -> None:
    """Collect the page's console errors/warnings, uncaught errors and every request it makes."""
    page.on("console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("request", lambda r: requests.append(r.url))


def serve(root: Path, cache_dir: Path, cwd: Path, args: Sequence[str] = ()) -> Iterator[str]:
    """``stepscope serve ROOT [ARGS]`` in a subprocess with its own cache: yields its URL once /api/v1/health
    answers, and stops it (SIGINT, then kill) when the fixture ends."""
    env = {**os.environ, "STEPSCOPE_CACHE_DIR": str(cache_dir)}
    proc = subprocess.Popen([sys.executable, "-m", "stepscope", "serve", str(root), "--no-browser", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if not m:
            proc.kill()
            pytest.fail(f"serve did not print its URL: {line!r} {proc.stderr.read() if proc.stderr else ''}")
        wait_healthy(m.group(1))
        yield m.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_healthy(base: str) -> None:
    """Poll /api/v1/health for up to 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/api/v1/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    pytest.fail("server did not answer /api/v1/health")


def wait_until(page: Any, expr: str, timeout_s: float = 120) -> None:
    """Poll a JS expression (page.wait_for_function would eval it in the page, which the CSP forbids)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expr):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {expr}")
        page.wait_for_timeout(50)
