"""Headless Chromium for the browser tests: Debian's chromium driven by Playwright (never downloaded)."""

from __future__ import annotations

from collections.abc import Iterator
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
