"""The overview's "step without the profiler (ms)" in a real headless Chromium (Debian's, Playwright).

``stepscope serve DIR --step-ms 40`` over ``h200_models/r3/gpt2_bf16`` (bound by the host on the
H200 as recorded; the profiler's cost decides what bounds it without the profiler). The page opens at
the serve-level step (the input holds 40, the cost "given"); the user types the 33.05 ms their
training log timed: the route keeps ``step_ms=33.05``, the page asks the server for that step's
document and shows its verdict, cost and findings as the API gives them — the What-if view too —,
and *clear* goes back to the served step. A value that is not a step is refused in the page. Every
test also checks: no console error, no request outside the server. ``STEPSCOPE_SCREENSHOT_DIR``
keeps the screenshots.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from browser import launch, need_playwright, record, serve, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
RUN = REPO / "tests" / "data" / "h200_models" / "r3" / "gpt2_bf16"
SERVED_MS, GIVEN_MS = "40", "33.05"


def _need_browser() -> None:
    need_playwright()
    pytest.importorskip("uvicorn", reason="uvicorn (a dependency of stepscope) is not installed")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _need_browser()
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(RUN, root / "gpt2_bf16")
    yield from serve(root, tmp_path_factory.mktemp("cache"), REPO, ["--step-ms", SERVED_MS])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _need_browser()
    yield from launch()


def api(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=180) as r:
        return json.load(r)


@dataclass
class Session:
    """One page and every request it made (checked clean when the test ends)."""

    page: Any
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def session(browser: Any, served: str) -> Iterator[Session]:
    s = Session(browser.new_page(viewport={"width": 1400, "height": 1000}))
    errors: list[str] = []
    record(s.page, errors, s.requests)
    yield s
    assert errors == []
    assert [u for u in s.requests if not u.startswith(served + "/")] == []
    s.page.close()


def _shot(page: Any, name: str) -> None:
    target = os.environ.get("STEPSCOPE_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=True)


def _shown(page: Any) -> dict[str, Any]:
    return page.evaluate("""() => ({
        verdict: document.querySelector('#verdict')?.textContent,
        source: document.querySelector('#profiler-cost')?.dataset.source,
        cost: document.querySelector('#profiler-cost')?.textContent,
        input: document.querySelector('#step-ms')?.value,
        rules: [...document.querySelectorAll('li.finding')].map((n) => n.dataset.rule),
        gains: [...document.querySelectorAll('li.finding .gain')].map((n) => n.textContent)})""")


def _step_queries(requests: list[str]) -> set[str]:
    """The step_ms values the page asked the API for (documents and replays)."""
    return {v for u in requests if "/api/v1/" in u for v in parse_qs(urlparse(u).query).get("step_ms", [])}


def test_the_step_typed_in_is_the_document_the_api_gives(session: Session, served: str) -> None:
    page = session.page
    rid = api(served, "/api/v1/runs")["runs"][0]["id"]
    at_served = api(served, f"/api/v1/runs/{rid}?rank=0")
    given = api(served, f"/api/v1/runs/{rid}?rank=0&step_ms={GIVEN_MS}")
    assert at_served["ranks"][0]["profiler_cost"]["measured_step_ms"] == float(SERVED_MS)
    assert given["verdicts"][0]["text"] != at_served["verdicts"][0]["text"]

    page.goto(f"{served}/#/run/{rid}/overview")
    page.wait_for_selector("#step-ms", timeout=180_000)
    first = _shown(page)
    assert (first["verdict"], first["source"], first["input"]) == (at_served["verdicts"][0]["text"], "given", SERVED_MS)
    assert not _step_queries(session.requests)  # the served step is the run's own: no step_ms asked

    page.fill("#step-ms", GIVEN_MS)
    page.click("#step-ms-apply")
    wait_until(page, f"location.hash.includes('step_ms={GIVEN_MS}') && !!document.querySelector('#step-ms-clear')")
    page.wait_for_selector("#profiler-cost")
    now = _shown(page)
    pc = given["ranks"][0]["profiler_cost"]
    assert now["verdict"] == given["verdicts"][0]["text"] and now["input"] == GIVEN_MS
    assert now["source"] == "given" and f"{pc['event_cost_us']} µs" in now["cost"]
    assert now["rules"] == [f["rule"] for f in given["findings"]]
    assert _step_queries(session.requests) == {GIVEN_MS}
    _shot(page, "serve-step-ms-overview.png")

    page.click("nav a[data-view=whatif]")  # every view keeps the step, the what-if's replays too
    page.wait_for_selector("#remedies #step-ms-clear", timeout=120_000)
    assert f"step_ms={GIVEN_MS}" in page.evaluate("location.hash") and _shown(page)["input"] == GIVEN_MS
    mean = given["ranks"][0]["remedies"]["unprofiled_mean_ms"]
    assert f"{mean:.2f} ms" in (page.locator("#remedies").text_content() or "")
    page.fill("#wi-host_overhead", "0")
    page.click("#whatif-go")
    page.wait_for_selector("#whatif-output[data-state=ready]", timeout=120_000)
    assert any(f"/whatif?step_ms={GIVEN_MS}" in u for u in session.requests)
    _shot(page, "serve-step-ms-whatif.png")

    page.click("nav a[data-view=overview]")
    page.wait_for_selector("#step-ms-clear", timeout=60_000)
    page.click("#step-ms-clear")
    wait_until(page, "!location.hash.includes('step_ms') && !document.querySelector('#step-ms-clear')")
    back = _shown(page)
    assert (back["verdict"], back["input"]) == (at_served["verdicts"][0]["text"], SERVED_MS)


def test_a_value_that_is_not_a_step_is_refused_in_the_page(session: Session, served: str) -> None:
    page = session.page
    rid = api(served, "/api/v1/runs")["runs"][0]["id"]
    page.goto(f"{served}/#/run/{rid}/overview")
    page.wait_for_selector("#step-ms", timeout=180_000)
    before = page.evaluate("location.hash")
    for bad in ("0", "-5"):
        page.fill("#step-ms", bad)
        page.click("#step-ms-apply")
        assert "above 0" in (page.locator("#step-ms-error").text_content() or "")
        assert page.evaluate("location.hash") == before
    assert not _step_queries(session.requests)
