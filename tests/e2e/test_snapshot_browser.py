"""The Memory snapshot view of ``stepscope serve`` in headless Chromium (tests/browser.py).

Served: a hand-made snapshot (tests/snapshot_builder.sawtooth: 3,001 allocs and frees, one 1 MiB peak)
and the real DeComFL snapshot (../shared/traces, SOURCES.md §10) when present. Checked: every number
shown equals the API's JSON, a wheel zoom fetches a narrower curve window at the same number of
points (a finer level of detail), a row's stack is the API's, paging asks the server for the next
page; no console error and no request outside the server.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from browser import launch, need_playwright, serve

from tests.e2e.test_serve_browser import Session, api, open_session, wait_until
from tests.snapshot_builder import sawtooth, small, two_devices, write

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "traces" / "decomfl" / "zo_fl_training_memory_snapshot" / "memory.pickle"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    need_playwright()
    root = tmp_path_factory.mktemp("snapshots")
    write(root / "saw.pickle", sawtooth())
    write(root / "small.pickle", small())
    write(root / "two.pickle", two_devices())
    if REAL.is_file():
        (root / "real").mkdir()
        shutil.copy(REAL, root / "real" / "memory.pickle")
    yield from serve(root, tmp_path_factory.mktemp("cache"), REPO)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


@pytest.fixture
def session(browser: Any, served: str) -> Iterator[Session]:
    yield from open_session(browser, served)


def _ids(base: str) -> dict[str, str]:
    return {r["label"]: r["id"] for r in api(base, "/api/v1/runs")["runs"]}


def _curves(requests: list[str]) -> list[dict[str, list[str]]]:
    return [parse_qs(urlparse(u).query) for u in requests if "/snapshot/curve" in u]


def _open(s: Session, rid: str) -> dict[str, Any]:
    s.page.goto(f"{s.base}/#/run/{rid}/snapshot")
    s.page.wait_for_selector("#snap-alloc-table tbody tr", timeout=120_000)
    doc: dict[str, Any] = api(s.base, f"/api/v1/runs/{rid}/snapshot")
    return doc


def _served(s: Session, rid: str) -> Callable[[str], Any]:
    """The API of one served snapshot: ``answer("/snapshot/curve?...")``."""
    return lambda sub: api(s.base, f"/api/v1/runs/{rid}{sub}")


def _check_view(s: Session, rid: str, doc: dict[str, Any], device: int | None = None,
                answer: Callable[[str], Any] | None = None) -> None:
    """Cards, categories, the curve and the first page of allocations of ``device`` (default: the one with
    the highest peak) equal the API's answers (``answer``: the served run's API by default)."""
    page = s.page
    ask = answer or _served(s, rid)
    h = max(doc["history"], key=lambda x: x["peak_live_bytes"]) if device is None else \
        next(x for x in doc["history"] if x["device"] == device)
    shown = {el.get_attribute("data-key"): float(el.get_attribute("data-value") or "nan")
             for el in page.query_selector_all("#snap-stats .stat")}
    assert shown == {"peak_live_bytes": h["peak_live_bytes"], "peak_ms": h["peak_ms"],
                     "reserved_bytes": doc["segments"]["reserved_bytes"],
                     "allocated_bytes": doc["segments"]["allocated_bytes"], "segments": doc["segments"]["count"],
                     "largest_alloc_bytes": doc["largest_alloc_bytes"]}
    cats = {tr.get_attribute("data-category"): int(tr.get_attribute("data-bytes") or -1)
            for tr in page.query_selector_all("#snap-category-table tr")}
    assert cats == h["by_category"]
    curve = ask(f"/snapshot/curve?device={h['device']}&start_ms=0&end_ms={h['duration_ms']}&points=800")
    chart = page.locator("#snap-chart")
    assert int(chart.get_attribute("data-points") or -1) == len(curve["time_ms"])
    assert int(chart.get_attribute("data-points-in-window") or -1) == curve["points_in_window"]
    allocs = ask(f"/snapshot/allocations?device={h['device']}&offset=0&limit=25")
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
    wait_until(session.page, "document.querySelectorAll('#runs .state-ready').length >= 3", 120)
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


def _pick_device(s: Session, device: int) -> None:
    s.page.select_option("#snap-device", str(device))
    wait_until(s.page, f"document.getElementById('snap-device-views').dataset.device === '{device}'")


def test_every_device_has_its_view(session: Session) -> None:
    """Two devices: the picker lists both (the higher peak first, shown first); each device's cards,
    curve and allocations equal the API's answers for that device."""
    rid = _ids(session.base)["two.pickle"]
    doc = _open(session, rid)
    page = session.page
    assert [int(v) for v in page.locator("#snap-device option").evaluate_all("o => o.map(x => x.value)")] == [1, 0]
    assert page.locator("#snap-device-views").get_attribute("data-device") == "1"
    _check_view(session, rid, doc, 1)
    _pick_device(session, 0)
    _check_view(session, rid, doc, 0)
    assert page.locator("#snap-stats .stat[data-key=peak_live_bytes]").get_attribute("data-value") == "1000"
    assert page.locator("#snap-history h2").text_content() == "Live bytes over time, device 0"
    assert {q["device"][0] for q in _curves(session.requests)} == {"0", "1"}
    session.shot("snapshot-two-devices.png")


def _local_api(path: Path) -> Callable[[str], Any]:
    """What the server would answer about the snapshot at ``path`` (server/snapshots.py, in process)."""
    import json

    from stepscope.server import snapshots
    from stepscope.server.discover import RunEntry

    res = snapshots.analyse_snapshot(RunEntry("x", path.name, path, "snapshot"))

    def answer(sub: str) -> Any:
        u = urlparse(sub)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path == "/snapshot/curve":
            return json.loads(snapshots.curve(res, q, int(q["points"])))
        if u.path == "/snapshot/allocations":
            return json.loads(snapshots.allocations(res, snapshots.device(res, q), int(q["offset"]), int(q["limit"])))
        return json.loads(res.doc)
    return answer


def _open_file(browser: Any, url: str) -> Session:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    s = Session(page, url.split("#")[0])
    page.goto(url)
    page.wait_for_selector("#snap-alloc-table tbody tr", timeout=60_000)
    return s


def test_the_report_carries_the_snapshot(browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``report TRACE --snapshot S -o r.html``: a Memory snapshot tab beside the run's views, every device,
    the numbers the server would answer, zoom to the peak from the carried windows, offline."""
    from tests.unit.ingest.test_bad_input import run_main

    snap, out = write(tmp_path / "two.pickle", two_devices()), tmp_path / "r.html"
    res = run_main(["report", str(REPO / "tests" / "data" / "h100_cuda_train" / "base"), "--snapshot", str(snap),
                    "-o", str(out)], capsys)
    assert res.returncode == 0, res.stderr
    answer = _local_api(snap)
    doc = answer("/snapshot")
    s = _open_file(browser, out.as_uri() + "#/run/report/snapshot")
    page = s.page
    views = page.locator("nav a[data-view]").evaluate_all("a => a.map(x => x.dataset.view)")
    assert views[0] == "overview" and views[-1] == "snapshot"
    _check_view(s, "report", doc, 1, answer)
    page.click("#snap-zoom-peak")  # the 2 % window around the peak: carried
    wait_until(page, "document.getElementById('snap-chart').dataset.endMs - "
                     "document.getElementById('snap-chart').dataset.startMs < 40")
    chart = page.locator("#snap-chart")
    lo, hi = float(chart.get_attribute("data-start-ms") or 0), float(chart.get_attribute("data-end-ms") or 0)
    h1 = next(h for h in doc["history"] if h["device"] == 1)
    want = answer(f"/snapshot/curve?device=1&start_ms={lo}&end_ms={hi}&points=800")
    assert lo <= h1["peak_ms"] <= hi and hi - lo == pytest.approx(0.02 * h1["duration_ms"])
    assert int(chart.get_attribute("data-points") or -1) == len(want["time_ms"])
    s.shot("snapshot-report-peak.png")
    _pick_device(s, 0)
    _check_view(s, "report", doc, 0, answer)
    s.shot("snapshot-report-device0.png")
    assert s.errors == [] and set(s.requests) == {out.as_uri()}
    page.close()


def test_a_report_of_the_real_snapshot_alone(browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``report --snapshot memory.pickle -o s.html`` (no trace): the snapshot's view is the page; it carries
    the 100 largest allocations live at the peak and says so; a bad snapshot is one line, exit 2."""
    from tests.unit.ingest.test_bad_input import run_main

    if not REAL.is_file():
        pytest.skip(f"{REAL} is absent (../shared/traces, SOURCES.md §10)")
    out = tmp_path / "s.html"
    res = run_main(["report", "--snapshot", str(REAL), "-o", str(out)], capsys)
    assert res.returncode == 0, res.stderr
    answer = _local_api(REAL)
    doc = answer("/snapshot")
    s = _open_file(browser, out.as_uri())
    page = s.page
    assert page.locator("nav a[data-view]").all_text_contents() == ["Memory snapshot"]
    _check_view(s, "report", doc, None, answer)
    total = answer("/snapshot/allocations?device=0&offset=0&limit=1")["total"]
    assert total > 100 and "largest 100" in (page.locator("#snap-alloc-carried").text_content() or "")
    for _ in range(3):
        page.click("#snap-alloc-next")
    wait_until(page, "document.getElementById('snap-alloc-count').textContent.startsWith('76')")
    assert page.locator("#snap-alloc-next").is_disabled()
    want = answer("/snapshot/allocations?device=0&offset=75&limit=25")["allocations"]
    assert [int(r.get_attribute("data-bytes") or -1) for r in page.query_selector_all("#snap-alloc-table tbody tr")] \
        == [a["bytes"] for a in want]
    s.shot("snapshot-report-real.png")
    assert s.errors == [] and set(s.requests) == {out.as_uri()}
    page.close()
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(b"\x80\x04cos\nsystem\n.")
    res = run_main(["report", "--snapshot", str(bad), "-o", str(tmp_path / "b.html")], capsys)
    assert res.returncode == 2 and "bad.pickle" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "b.html").exists()
