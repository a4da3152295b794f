"""The Memory snapshot view of ``stepscope serve`` in headless Chromium (tests/browser.py).

Served: a hand-made snapshot (tests/snapshot_builder.sawtooth: 3,001 allocs and frees, one 1 MiB peak)
and the real DeComFL snapshot (../shared/traces, SOURCES.md §10) when present. Checked: every number
shown equals the API's JSON, a wheel zoom fetches a narrower curve window at the same number of
points (a finer level of detail), a row's stack is the API's, paging asks the server for the next
page; no console error and no request outside the server.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from browser import launch, need_playwright, serve

from tests.e2e.test_serve_browser import Session, api, wait_until
from tests.snapshot_builder import sawtooth, small, write

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "traces" / "decomfl" / "zo_fl_training_memory_snapshot" / "memory.pickle"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    need_playwright()
    root = tmp_path_factory.mktemp("snapshots")
    write(root / "saw.pickle", sawtooth())
    write(root / "small.pickle", small())
    if REAL.is_file():
        (root / "real").mkdir()
        shutil.copy(REAL, root / "real" / "memory.pickle")
    yield from serve(root, tmp_path_factory.mktemp("cache"), REPO)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


@pytest.fixture
def session(browser: Any, served: str) -> Iterator[Session]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    s = Session(page, served)
    yield s
    s.check_clean()
    page.close()


def _ids(base: str) -> dict[str, str]:
    return {r["label"]: r["id"] for r in api(base, "/api/v1/runs")["runs"]}


def _curves(requests: list[str]) -> list[dict[str, list[str]]]:
    return [parse_qs(urlparse(u).query) for u in requests if "/snapshot/curve" in u]


def _open(s: Session, rid: str) -> dict[str, Any]:
    s.page.goto(f"{s.base}/#/run/{rid}/snapshot")
    s.page.wait_for_selector("#snap-alloc-table tbody tr", timeout=120_000)
    doc: dict[str, Any] = api(s.base, f"/api/v1/runs/{rid}/snapshot")
    return doc


def _check_view(s: Session, rid: str, doc: dict[str, Any]) -> None:
    """Cards, categories, the curve and the first page of allocations equal the API's answers."""
    page = s.page
    h = max(doc["history"], key=lambda x: x["peak_live_bytes"])
    shown = {el.get_attribute("data-key"): float(el.get_attribute("data-value") or "nan")
             for el in page.query_selector_all("#snap-stats .stat")}
    assert shown == {"peak_live_bytes": h["peak_live_bytes"], "peak_ms": h["peak_ms"],
                     "reserved_bytes": doc["segments"]["reserved_bytes"],
                     "allocated_bytes": doc["segments"]["allocated_bytes"], "segments": doc["segments"]["count"],
                     "largest_alloc_bytes": doc["largest_alloc_bytes"]}
    cats = {tr.get_attribute("data-category"): int(tr.get_attribute("data-bytes") or -1)
            for tr in page.query_selector_all("#snap-category-table tr")}
    assert cats == h["by_category"]
    curve = api(s.base, f"/api/v1/runs/{rid}/snapshot/curve?device={h['device']}&start_ms=0&end_ms="
                        f"{h['duration_ms']}&points=800")
    chart = page.locator("#snap-chart")
    assert int(chart.get_attribute("data-points") or -1) == len(curve["time_ms"])
    assert int(chart.get_attribute("data-points-in-window") or -1) == curve["points_in_window"]
    allocs = api(s.base, f"/api/v1/runs/{rid}/snapshot/allocations?device={h['device']}&offset=0&limit=25")
    rows = page.query_selector_all("#snap-alloc-table tbody tr")
    assert [int(r.get_attribute("data-bytes") or -1) for r in rows] == [a["bytes"] for a in allocs["allocations"]]
    sites = [r.query_selector_all("td")[4].text_content() for r in rows]
    assert sites == [a["site"] or "–" for a in allocs["allocations"]]
    rows[0].click()
    assert page.locator("#snap-stack li").all_text_contents() == allocs["allocations"][0]["stack"]


def _zoom(s: Session) -> None:
    """Wheel over the curve: a narrower window is fetched at the same number of points and drawn."""
    page = s.page
    chart = page.locator("#snap-chart")
    span0 = float(chart.get_attribute("data-end-ms") or 0) - float(chart.get_attribute("data-start-ms") or 0)
    before = len(_curves(s.requests))
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -300)
    wait_until(page, f"(() => {{ const c = document.getElementById('snap-chart'); return c && "
                     f"c.dataset.endMs - c.dataset.startMs < {span0 * 0.75}; }})()")
    q = _curves(s.requests)[before:][-1]
    span1 = float(q["end_ms"][0]) - float(q["start_ms"][0])
    assert span1 == pytest.approx(span0 / 2, rel=1e-6) and q["points"] == ["800"]
    last = urlparse([u for u in s.requests if "/snapshot/curve" in u][-1])
    answer = api(s.base, f"{last.path}?{last.query}")
    assert int(chart.get_attribute("data-points") or -1) == len(answer["time_ms"])


def test_the_hand_made_snapshot_equals_the_api_and_zoom_refetches(session: Session) -> None:
    rid = _ids(session.base)["saw.pickle"]
    doc = _open(session, rid)
    assert doc["history"][0]["peak_live_bytes"] == (1 << 20) + 8 * 1024  # tests/snapshot_builder.sawtooth
    _check_view(session, rid, doc)
    _zoom(session)
    session.page.click("#snap-zoom-peak")
    wait_until(session.page, "document.getElementById('snap-chart').dataset.endMs - "
                             "document.getElementById('snap-chart').dataset.startMs < 40")
    chart = session.page.locator("#snap-chart")
    lo, hi = float(chart.get_attribute("data-start-ms") or 0), float(chart.get_attribute("data-end-ms") or 0)
    assert lo <= 700.2 <= hi and int(chart.get_attribute("data-points-in-window") or 0) < 800  # now exact
    assert session.page.locator("#snap-alloc-next").is_disabled()  # 3 allocations live at the peak
    session.shot("snapshot-saw.png")


def test_the_runs_list_links_snapshots_to_their_view(session: Session) -> None:
    session.page.goto(session.base + "/")
    wait_until(session.page, "document.querySelectorAll('#runs .state-ready').length >= 2", 120)
    session.page.click("#runs a.runcard:has-text('small.pickle')")
    session.page.wait_for_selector("#snap-stats", timeout=60_000)
    assert session.page.locator("nav a[data-view]").all_text_contents() == ["Memory snapshot"]
    assert session.page.locator("#snap-stats .stat[data-key=peak_live_bytes]").get_attribute("data-value") == "1000"


def test_the_real_snapshot_equals_the_api_pages_and_zooms(session: Session) -> None:
    if not REAL.is_file():
        pytest.skip(f"{REAL} is absent (../shared/traces, SOURCES.md §10)")
    rid = _ids(session.base)["real/memory.pickle"]
    doc = _open(session, rid)
    assert (doc["history"][0]["peak_live_bytes"], round(doc["history"][0]["peak_ms"], 1)) == (1_783_664_516, 1622.5)
    _check_view(session, rid, doc)
    _zoom(session)
    session.page.click("#snap-alloc-next")
    wait_until(session.page, "document.getElementById('snap-alloc-count').textContent.startsWith('26')")
    nxt = api(session.base, f"/api/v1/runs/{rid}/snapshot/allocations?device=0&offset=25&limit=25")
    rows = session.page.query_selector_all("#snap-alloc-table tbody tr")
    shown = [int(r.get_attribute("data-bytes") or -1) for r in rows]
    assert shown == [a["bytes"] for a in nxt["allocations"]]
    session.shot("snapshot-real.png")
