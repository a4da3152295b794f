"""The timeline at Perfetto's level, in a real headless Chromium: click an event for its details, its
flows drawn from it only, search by name with next / previous, collapsible tracks, every rank of a
run on one time axis, two runs' timelines aligned step to step, and the standalone report's timeline.

``stepscope serve`` runs as a subprocess on a free loopback port (the H100 base and fixed runs of the
repo, the two-rank CPU DDP run). Each shown value is checked against the JSON API (or, in the report,
the embedded JSON); every test also checks no console error and no request outside the page.
Screenshots go to ``STEPSCOPE_SCREENSHOT_DIR`` when set.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from browser import launch, need_playwright, record, serve

from tests.e2e.test_serve_browser import api

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
CPU_ROW, GPU_ANNOT = 15, 5  # tl_canvas.js: ROW, ANNOT_H


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    need_playwright()
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(DATA / "h100_cuda_train" / "base", root / "h100_base")
    shutil.copytree(DATA / "h100_cuda_train" / "fixed", root / "h100_fixed")
    shutil.copytree(DATA / "cpu_ddp_2rank", root / "cpu_ddp_2rank")
    shutil.copytree(DATA / "cpu_ddp_2rank", root / "cpu_ddp_2rank_b")
    yield from serve(root, tmp_path_factory.mktemp("cache"), REPO)


@pytest.fixture(scope="module")
def ids(served: str) -> dict[str, str]:
    return {r["label"]: r["id"] for r in api(served, "/api/v1/runs")["runs"]}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    need_playwright()
    yield from launch()


class Tl:
    """One page on a timeline, with what it logged and requested, and the canvas geometry."""

    def __init__(self, page: Any, base: str) -> None:
        self.page, self.base = page, base
        self.errors: list[str] = []
        self.requests: list[str] = []
        record(page, self.errors, self.requests)

    def wait(self, expr: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.page.evaluate(expr):
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {expr}")
            self.page.wait_for_timeout(50)

    def data(self, key: str, sel: str = "#timeline-canvas") -> str:
        return str(self.page.locator(sel).first.get_attribute(f"data-{key}") or "")

    def fetches(self, sel: str = "#timeline-canvas") -> int:
        return int(self.data("fetches", sel) or 0)

    def settle(self, before: int, sel: str = "#timeline-canvas") -> None:
        """Wait for a fetch after ``before`` (the gesture's refined windows drawn)."""
        self.wait(f"Number(document.querySelector('{sel}').dataset.fetches || 0) > {before}")

    def layout(self, sel: str = "#timeline-canvas") -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.data("layout", sel))
        return out

    def view(self, sel: str = "#timeline-canvas") -> tuple[float, float]:
        a, b = self.data("view", sel).split(",")
        return float(a), float(b)

    def point(self, group: int, track: int, ts_ns: int, dur_ns: int, depth: int, gpu: bool,
              sel: str = "#timeline-canvas") -> tuple[float, float]:
        """Page coordinates of the middle of an event as tl_canvas.js draws it."""
        lay, (a, b) = self.layout(sel), self.view(sel)
        offset = float(self.data("offsets", sel).split(",")[group])
        lane = next(ln for ln in lay["lanes"] if ln["g"] == group and ln["track"] == track)
        gut, width = lay["gutter"], lay["width"]
        mid = ts_ns - offset + dur_ns / 2
        x = gut + (mid - a) / (b - a) * (width - gut)
        y = lane["y"] + (GPU_ANNOT + (lane["h"] - GPU_ANNOT) / 2 if gpu else depth * CPU_ROW + CPU_ROW / 2)
        box = self.page.locator(sel).first.bounding_box()
        if not 0 <= box["y"] + y < self.page.viewport_size["height"]:  # a click outside the viewport hits nothing
            self.page.evaluate("(dy) => window.scrollBy(0, dy)", box["y"] + y - self.page.viewport_size["height"] / 2)
            box = self.page.locator(sel).first.bounding_box()
        return box["x"] + x, box["y"] + y

    def windows(self, run: str | None = None) -> list[dict[str, str]]:
        out = []
        for u in self.requests:
            if "/timeline?" in u and (run is None or f"/runs/{run}/" in u):
                out.append({k: v[0] for k, v in parse_qs(urlparse(u).query).items()})
        return out

    def check_clean(self) -> None:
        assert self.errors == []
        assert [u for u in self.requests if not u.startswith(self.base + "/")] == []

    def shot(self, name: str, full: bool = True, element: str | None = None) -> None:
        target = os.environ.get("STEPSCOPE_SCREENSHOT_DIR")
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            self.page.mouse.move(1, 1)  # no tooltip over the view
            path = str(Path(target) / name)
            if element:
                self.page.locator(element).screenshot(path=path)
            else:
                self.page.screenshot(path=path, full_page=full)


@pytest.fixture
def tl(browser: Any, served: str) -> Iterator[Tl]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    s = Tl(page, served)
    yield s
    s.check_clean()
    page.close()


def _open_step(tl: Tl, rid: str, step: str = "9") -> dict[str, Any]:
    """The run's timeline at one step (exact events); returns the API's answer for that same window."""
    tl.page.goto(f"{tl.base}/#/run/{rid}/timeline")
    tl.page.wait_for_selector("#timeline-canvas[data-fetches='1']", timeout=120_000)
    tl.page.select_option("#timeline-step", step)
    tl.settle(1)
    tl.wait("document.getElementById('timeline-canvas').dataset.mode === 'events'")
    q = tl.windows(rid)[-1]
    window: dict[str, Any] = api(tl.base, f"/api/v1/runs/{rid}/timeline?{urlencode(q)}")
    assert window["mode"] == "events"
    return window


def _events(window: dict[str, Any]) -> list[dict[str, Any]]:
    ev = window["events"]
    return [dict(zip(ev, vals)) for vals in zip(*ev.values())]


def _gpu_tracks(window: dict[str, Any]) -> set[int]:
    return {t["id"] for t in window["tracks"] if t["kind"] == "gpu_stream"}


def _click(tl: Tl, e: dict[str, Any], window: dict[str, Any], group: int = 0) -> None:
    gpu = e["track"] in _gpu_tracks(window)
    x, y = tl.point(group, e["track"], e["ts_ns"], e["dur_ns"], e["depth"], gpu)
    tl.page.mouse.click(x, y)
    tl.wait(f"document.getElementById('timeline-details').dataset.row === '{e['row']}'"
            " && document.getElementById('timeline-details').dataset.state === 'ready'")


def _table(page: Any, table_id: str) -> dict[str, str]:
    """A details key → value table as shown."""
    keys = page.locator(f"#{table_id} th").all_text_contents()
    return dict(zip(keys, page.locator(f"#{table_id} td").all_text_contents()))


def _value(text: str) -> Any:
    """A shown argument back as JSON (numbers, [x, y, z]); text as it is."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _widest(events: list[dict[str, Any]], pred: Any) -> dict[str, Any]:
    return max((e for e in events if pred(e)), key=lambda e: e["dur_ns"])


def test_click_shows_the_api_details_and_flows_from_it_only(tl: Tl, ids: dict[str, str]) -> None:
    rid = ids["h100_base"]
    window = _open_step(tl, rid)
    assert tl.data("flows") == "0"  # nothing selected: no flow drawn
    events = _events(window)
    rows = {e["row"] for e in events}
    launched = {f["to_row"]: f["from_row"] for f in window["flows"]}
    # a kernel whose launch call and launching op are both in the window: two arrows, to it
    kernel = _widest(events, lambda e: e["kind"] == "kernel" and launched.get(e["row"]) in rows and e["op"] in rows)
    _click(tl, kernel, window)
    det = api(tl.base, f"/api/v1/runs/{rid}/event?rank=0&row={kernel['row']}")
    page = tl.page
    assert page.locator("#tl-det-name").text_content() == det["name"] == kernel["name"]
    assert int(tl.data("dur-ns", "#timeline-details")) == det["dur_ns"]
    facts = _table(page, "tl-det-facts")
    assert facts["kind"] == "kernel" and facts["step"] == str(det["step"]) and facts["row"] == str(det["row"])
    shown_args = _table(page, "tl-det-args")
    assert {k: _value(v) for k, v in shown_args.items()} == det["args"]
    assert "grid" in shown_args and "corr" in shown_args
    assert page.locator("#tl-det-op button").get_attribute("data-row") == str(det["op"]["row"]) == str(kernel["op"])
    assert page.locator("#tl-det-launch button").get_attribute("data-row") == str(det["launch"]["row"])
    tl.wait("document.getElementById('timeline-canvas').dataset.flows === '2'")
    assert tl.data("selected") == f"0:{kernel['row']}"
    tl.shot("timeline-click-kernel.png")
    # its launching op: shapes, enclosing ops, and the kernels it launched (the API's list)
    page.click("#tl-det-op button")
    tl.wait(f"document.getElementById('timeline-details').dataset.row === '{det['op']['row']}'"
            " && document.getElementById('timeline-details').dataset.state === 'ready'")
    op = api(tl.base, f"/api/v1/runs/{rid}/event?rank=0&row={det['op']['row']}")
    assert page.locator("#tl-det-name").text_content() == op["name"]
    inputs = _table(page, "tl-det-inputs")
    assert json.loads(inputs["input dims"]) == op["input_dims"]
    assert [int(r) for r in page.locator("#tl-det-kernels button").evaluate_all("b => b.map(x => x.dataset.row)")] \
        == [k["row"] for k in op["kernels"]]
    assert kernel["row"] in [k["row"] for k in op["kernels"]]
    assert int(page.locator("#tl-det-kernel-head").get_attribute("data-count") or -1) == op["kernel_count"]
    assert page.locator("#tl-det-parents button").evaluate_all("b => b.map(x => Number(x.dataset.row))") \
        == [p["row"] for p in op["parents"]]
    tl.wait(f"Number(document.getElementById('timeline-canvas').dataset.flows) >= {len(op['kernels'])}")
    tl.shot("timeline-click-op.png")
    # a click on empty space clears the selection and its flows: the time axis, above every lane (the
    # bottom lane's left end holds an event in some views, depending on which windows have arrived)
    lay = tl.layout()
    box = page.locator("#timeline-canvas").bounding_box()
    page.mouse.click(box["x"] + lay["gutter"] + 5, box["y"] + 10)
    tl.wait("document.getElementById('timeline-canvas').dataset.flows === '0'")
    assert tl.data("selected") == ""


def test_search_highlights_and_jumps(tl: Tl, ids: dict[str, str]) -> None:
    rid = ids["h100_base"]
    _open_step(tl, rid, "7")
    found = api(tl.base, f"/api/v1/runs/{rid}/search?rank=0&q=ATEN::MM")
    assert found["total"] > 2
    page = tl.page
    a, b = tl.view()
    offset = float(tl.data("offsets"))
    page.fill("#timeline-search", "ATEN::MM")
    page.press("#timeline-search", "Enter")
    tl.wait("document.getElementById('timeline-details').dataset.state === 'ready'"
            " && document.getElementById('timeline-details').dataset.row !== ''")
    assert int(tl.data("total", "#timeline-hits")) == found["total"]
    m = found["matches"]
    starts = [t - offset for t in m["ts_ns"]]
    first = next(i for i, t in enumerate(starts) if t >= (a + b) / 2)  # the first match from the view's middle on
    assert tl.data("selected") == f"0:{m['row'][first]}"
    assert page.locator("#tl-det-name").text_content() == m["name"][first] == "aten::mm"
    assert page.locator("#timeline-hits").text_content().startswith(f"{first + 1} of {found['total']}")
    tl.settle(tl.fetches() - 1)
    tl.wait("Number(document.getElementById('timeline-canvas').dataset.matches) >= 1")
    tl.shot("timeline-search.png")
    page.click("#timeline-next")
    nxt = (first + 1) % found["total"]
    tl.wait(f"document.getElementById('timeline-canvas').dataset.selected === '0:{m['row'][nxt]}'")
    page.click("#timeline-prev")
    page.click("#timeline-prev")
    prev = (first - 1) % found["total"]
    tl.wait(f"document.getElementById('timeline-canvas').dataset.selected === '0:{m['row'][prev]}'")
    assert tl.data("index", "#timeline-hits") == str(prev)


def test_search_pages_through_many_matches(tl: Tl, ids: dict[str, str]) -> None:
    """5,997 events contain "a": the UI holds 2,000 at a time and pages both ways from the view's middle."""
    rid, page = ids["h100_base"], tl.page
    full = api(tl.base, f"/api/v1/runs/{rid}/search?rank=0&q=a&limit=10000")
    assert full["total"] > 4000 and not full["truncated"]
    rows, starts = full["matches"]["row"], full["matches"]["ts_ns"]
    page.goto(f"{tl.base}/#/run/{rid}/timeline")
    page.wait_for_selector("#timeline-canvas[data-fetches='1']", timeout=120_000)
    a, b = tl.view()
    mid_ns = round(float(tl.data("offsets"))) + round((a + b) / 2)
    before_mid = sum(t < mid_ns for t in starts)
    assert 2000 < before_mid < full["total"] - 10  # the previous match is beyond the first page
    page.fill("#timeline-search", "a")
    expected = [before_mid - 1, before_mid, before_mid - 1, before_mid - 2]
    for button, index in zip(["prev", "next", "prev", "prev"], expected):
        page.click(f"#timeline-{button}")
        tl.wait(f"document.getElementById('timeline-canvas').dataset.selected === '0:{rows[index]}'")
        assert tl.data("index", "#timeline-hits") == str(index)
        assert page.locator("#timeline-hits").text_content() == f"{index + 1:,} of {full['total']:,} matches"
    tl.wait("document.getElementById('timeline-details').dataset.state === 'ready'")
    assert page.locator("#tl-det-name").text_content() == full["matches"]["name"][expected[-1]]
    paged = [q for q in tl.requests if "/search?" in q]
    assert any("before_ns=" in q for q in paged) and any("after_ns=" in q for q in paged)


def test_tracks_collapse_and_expand(tl: Tl, ids: dict[str, str]) -> None:
    window = _open_step(tl, ids["h100_base"])
    lay = tl.layout()
    cpu = next(ln for ln in lay["lanes"] if ln["rows"] > 1)
    box = tl.page.locator("#timeline-canvas").bounding_box()
    tl.page.mouse.click(box["x"] + 20, box["y"] + cpu["y"] + 5)
    folded = next(ln for ln in tl.layout()["lanes"] if ln["track"] == cpu["track"])
    assert folded["folded"] and folded["h"] == 9 and folded["rows"] == 1
    below = [ln for ln in tl.layout()["lanes"] if ln["y"] > folded["y"]]
    assert below and below[0]["y"] == folded["y"] + 9 + 2  # the lanes below moved up
    tl.shot("timeline-collapsed.png", full=False)
    # a folded lane still selects its top-level events
    top = _widest(_events(window), lambda e: e["track"] == cpu["track"] and e["depth"] == 0)
    x, _ = tl.point(0, top["track"], top["ts_ns"], top["dur_ns"], 0, False)
    tl.page.mouse.click(x, box["y"] + folded["y"] + 4)
    tl.wait(f"document.getElementById('timeline-details').dataset.row === '{top['row']}'")
    tl.page.mouse.click(box["x"] + 20, box["y"] + folded["y"] + 4)
    again = next(ln for ln in tl.layout()["lanes"] if ln["track"] == cpu["track"])
    assert not again["folded"] and again["h"] == cpu["h"]


def test_all_ranks_on_one_axis(tl: Tl, ids: dict[str, str]) -> None:
    rid = ids["cpu_ddp_2rank"]
    info = api(tl.base, f"/api/v1/runs/{rid}/info")["ranks"]
    page = tl.page
    page.goto(f"{tl.base}/#/run/{rid}/timeline")
    page.wait_for_selector("#timeline-canvas[data-fetches='1']", timeout=120_000)
    page.check("#timeline-all-ranks")
    tl.wait("document.getElementById('timeline-canvas').dataset.fetches === '1'"
            " && JSON.parse(document.getElementById('timeline-canvas').dataset.layout).heads.length === 2")
    lay = tl.layout()
    assert {ln["g"] for ln in lay["lanes"]} == {0, 1}
    first, last = min(r["start_ns"] for r in info), max(r["end_ns"] for r in info)
    offsets = [float(x) for x in tl.data("offsets").split(",")]
    assert offsets == [float(first)] * 2  # one clock: both ranks drawn against the run's first event
    a, b = tl.view()
    assert a == pytest.approx(0, abs=1e3) and b == pytest.approx(last - first, abs=1e3)
    # each rank's window was asked for the same absolute bounds
    reqs = tl.windows(rid)[-2:]
    assert {q["rank"] for q in reqs} == {"0", "1"} and len({(q["start_ns"], q["end_ns"]) for q in reqs}) == 1
    assert int(reqs[0]["start_ns"]) == pytest.approx(first, abs=1e3)
    tl.shot("timeline-all-ranks.png")
    # a rank's group folds from its header
    box = page.locator("#timeline-canvas").bounding_box()
    head = lay["heads"][1]
    page.mouse.click(box["x"] + 20, box["y"] + head["y"] + 8)
    lay2 = tl.layout()
    assert lay2["heads"][1]["folded"] and {ln["g"] for ln in lay2["lanes"]} == {0}
    tl.shot("timeline-all-ranks-folded.png", full=False)


def test_two_runs_aligned_step_to_step(tl: Tl, ids: dict[str, str]) -> None:
    base, new = ids["h100_base"], ids["h100_fixed"]
    ib = api(tl.base, f"/api/v1/runs/{base}/info")["ranks"][0]
    inew = api(tl.base, f"/api/v1/runs/{new}/info")["ranks"][0]
    page = tl.page
    page.goto(f"{tl.base}/#/diff?base={base}&new={new}")
    sel = "#diff-timeline #timeline-canvas"
    page.wait_for_selector(f"{sel}[data-aligned='0']", timeout=120_000)
    tl.settle(0, sel)
    k = 2
    before = tl.fetches(sel)
    page.select_option("#aligned-step", str(k))
    tl.wait(f"document.querySelector('{sel}').dataset.aligned === '{k}'")
    tl.settle(before, sel)  # and the windows drawn are those of the new alignment:
    canvas = f"document.querySelector('{sel}').dataset"
    tl.wait(f"{canvas}.fetchedOffsets === {canvas}.offsets")
    lay = tl.layout(sel)
    assert len(lay["heads"]) == 2
    offsets = [float(x) for x in tl.data("offsets", sel).split(",")]
    assert offsets == [float(ib["steps"][k]["start_ns"]), float(inew["steps"][k]["start_ns"])]
    a, b = tl.view(sel)
    longest = max(s["end_ns"] - s["start_ns"] for s in (ib["steps"][k], inew["steps"][k]))
    assert a < 0 < longest < b < longest * 1.1
    # each run's window is its own step k, shifted by the same view: step k of both starts at x = 0
    qb, qn = tl.windows(base)[-1], tl.windows(new)[-1]
    shift_base = int(qb["start_ns"]) - ib["steps"][k]["start_ns"]
    shift_new = int(qn["start_ns"]) - inew["steps"][k]["start_ns"]
    assert shift_base == pytest.approx(shift_new, abs=2) and shift_base == pytest.approx(a, abs=1e3)
    tl.shot("timeline-aligned.png", element="#diff-timeline")
    # an event of NEW is selectable (zoomed in until exact), and its details come from NEW's API
    while tl.data("mode", sel) != "events":
        before = tl.fetches(sel)
        page.click("#diff-timeline button[title='zoom in']")
        tl.settle(before, sel)
    qn_events = api(tl.base, f"/api/v1/runs/{new}/timeline?{urlencode(tl.windows(new)[-1])}")
    kern = _widest(_events(qn_events), lambda e: e["kind"] == "kernel")
    x, y = tl.point(1, kern["track"], kern["ts_ns"], kern["dur_ns"], 0, True, sel)
    page.mouse.click(x, y)
    tl.wait(f"document.querySelector('#diff-timeline #timeline-details').dataset.row === '{kern['row']}'"
            " && document.querySelector('#diff-timeline #timeline-details').dataset.state === 'ready'")
    det = api(tl.base, f"/api/v1/runs/{new}/event?rank=0&row={kern['row']}")
    assert page.locator("#diff-timeline #tl-det-name").text_content() == det["name"]
    tl.shot("timeline-aligned-selected.png", element="#diff-timeline")


def _aligned_ranks(tl: Tl, sel: str, infos: list[list[dict[str, Any]]]) -> None:
    """The aligned view's rank picker: rank 1 of both runs, then every rank stacked; each group's
    offset is its own rank's k-th step (``infos``: BASE's and NEW's ranks as GET .../info gives them)."""
    page = tl.page
    assert page.locator("#aligned-rank option").all_text_contents() == ["rank 0", "rank 1", "all 2 ranks stacked"]
    k = int(tl.data("aligned", sel))

    def step(side: int, r: int) -> dict[str, int]:
        out: dict[str, int] = infos[side][r]["steps"][k]
        return out

    page.select_option("#aligned-rank", "1")
    tl.wait(f"document.querySelector('{sel}').dataset.ranks === 'base1,new1'")
    assert [float(x) for x in tl.data("offsets", sel).split(",")] == \
        [float(step(0, 1)["start_ns"]), float(step(1, 1)["start_ns"])]
    heads = tl.layout(sel)["heads"]
    assert len(heads) == 2
    page.select_option("#aligned-rank", "2")
    tl.wait(f"document.querySelector('{sel}').dataset.ranks === 'base0,base1,new0,new1'")
    modes = f"document.querySelector('{sel}').dataset.modes"
    tl.wait(f"{modes} && {modes}.split(',').filter(Boolean).length === 4")
    assert [float(x) for x in tl.data("offsets", sel).split(",")] == \
        [float(step(side, r)["start_ns"]) for side in (0, 1) for r in (0, 1)]
    assert len(tl.layout(sel)["heads"]) == 4
    a, b = tl.view(sel)
    longest = max(step(side, r)["end_ns"] - step(side, r)["start_ns"] for side in (0, 1) for r in (0, 1))
    assert a <= 0 and b == pytest.approx(a + longest, rel=0.1)
    assert page.locator("#aligned-step option").count() == \
        min(len(infos[s][r]["steps"]) for s in (0, 1) for r in (0, 1))


def test_aligned_timelines_pick_a_rank_or_stack_them(tl: Tl, ids: dict[str, str]) -> None:
    base, new = ids["cpu_ddp_2rank"], ids["cpu_ddp_2rank_b"]
    infos = [api(tl.base, f"/api/v1/runs/{run}/info")["ranks"] for run in (base, new)]
    page = tl.page
    page.goto(f"{tl.base}/#/diff?base={base}&new={new}")
    sel = "#diff-timeline #timeline-canvas"
    page.wait_for_selector(f"{sel}[data-aligned='0']", timeout=120_000)
    assert tl.data("ranks", sel) == "base0,new0"
    _aligned_ranks(tl, sel, infos)
    page.select_option("#aligned-step", "1")
    tl.wait(f"document.querySelector('{sel}').dataset.aligned === '1'")
    assert [float(x) for x in tl.data("offsets", sel).split(",")] == \
        [float(infos[side][r]["steps"][1]["start_ns"]) for side in (0, 1) for r in (0, 1)]
    # each group asked its own run and rank for its windows
    canvas = f"document.querySelector('{sel}').dataset"
    tl.wait(f"{canvas}.fetchedOffsets === {canvas}.offsets")
    asked = {(run, q["rank"]) for run in (base, new) for q in tl.windows(run)}
    assert {(base, "0"), (base, "1"), (new, "0"), (new, "1")} <= asked
    tl.shot("timeline-aligned-stacked.png", element="#diff-timeline")


def _check_details(page: Any, det: dict[str, Any], scope: str = "") -> None:
    """The details panel shows ``det`` (an event_details answer): facts, arguments, inputs, call stack,
    enclosing events, launch call, launching op and the GPU work launched."""
    def rows(sel: str) -> list[int]:
        return [int(r) for r in page.locator(f"{scope} {sel} button").evaluate_all("b => b.map(x => x.dataset.row)")]

    assert page.locator(f"{scope} #tl-det-name").text_content() == det["name"]
    facts = _table(page, "tl-det-facts")
    assert facts["row"] == str(det["row"]) and facts["kind"] == det["kind"].replace("_", " ")
    assert facts["step"] == (str(det["step"]) if det["step"] >= 0 else "outside steps")
    assert {k: _value(v) for k, v in _table(page, "tl-det-args").items()} == det["args"]
    inputs = {k: json.loads(v) for k, v in _table(page, "tl-det-inputs").items()}
    assert inputs == {k: det[c] for k, c in (("input dims", "input_dims"), ("input types", "input_types"),
                                             ("concrete inputs", "concrete_inputs")) if det[c] is not None}
    assert page.locator(f"{scope} #tl-det-stack li").all_text_contents() == det["call_stack"]
    assert rows("#tl-det-parents") == [p["row"] for p in det["parents"]]
    assert rows("#tl-det-op") == ([det["op"]["row"]] if det["op"] else [])
    assert rows("#tl-det-launch") == ([det["launch"]["row"]] if det["launch"] else [])
    assert rows("#tl-det-kernels") == [k["row"] for k in det["kernels"]]
    head = page.locator(f"{scope} #tl-det-kernel-head")
    assert head.count() == (1 if det["kernels"] else 0)
    if det["kernels"]:
        assert (int(head.get_attribute("data-count") or -1), int(head.get_attribute("data-ns") or -1)) == \
            (det["kernel_count"], det["kernel_ns"])


def test_standalone_report_timeline(browser: Any, tmp_path: Path) -> None:
    """The report carries step N's events and their details: a click shows what GET .../event answers
    (arguments, shapes, call stack, launch, op, kernels), search and flows work on them, offline."""
    import stepscope
    from stepscope.analysis.timeline_event import event_details
    from stepscope.cli.report_cmd import _from_trace
    from stepscope.server.standalone import write_text

    out = tmp_path / "h100.html"
    _doc, page_text = _from_trace(str(DATA / "h100_cuda_train" / "base"), None, None, True, None, ())
    write_text(out, page_text)
    trace = stepscope.load(DATA / "h100_cuda_train" / "base")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    tl = Tl(page, out.as_uri())
    page.goto(out.as_uri() + "#/run/report/timeline")
    page.wait_for_selector("#timeline-canvas[data-mode='events']", timeout=30_000)
    tl.wait("document.getElementById('timeline-canvas').dataset.layout !== undefined")
    data = json.loads(page.locator("#stepscope-doc").text_content() or "{}")
    snap = data["timeline"]["0"]
    exact = next(w for w in snap["windows"] if w["mode"] == "events")
    names = exact["events"]["name"]
    ev = dict(exact["events"], name=[names["strings"][i] for i in names["index"]])
    ev.pop("kind")
    events = [dict(zip(ev, vals)) for vals in zip(*ev.values())]
    kinds = exact["events"]["kind"]
    for e, i in zip(events, kinds["index"]):
        e["kind"] = kinds["strings"][i]
    kernel = _widest(events, lambda e: e["kind"] == "kernel")
    _click(tl, kernel, exact)
    det = event_details(trace, 0, kernel["row"])
    assert det["args"]["grid"] and det["launch"] and det["op"]
    _check_details(page, det)
    assert page.locator("#timeline-details .errmsg").count() == 0
    tl.wait("Number(document.getElementById('timeline-canvas').dataset.flows) >= 2")
    tl.shot("timeline-report-click.png")
    # its launching op: shapes, call stack, enclosing ops, every kernel it launched (not only the window's)
    page.click("#tl-det-op button")
    tl.wait(f"document.getElementById('timeline-details').dataset.row === '{det['op']['row']}'"
            " && document.getElementById('timeline-details').dataset.state === 'ready'")
    op = event_details(trace, 0, det["op"]["row"])
    assert op["input_dims"] and op["parents"] and kernel["row"] in [k["row"] for k in op["kernels"]]
    _check_details(page, op)
    tl.shot("timeline-report-op.png")
    page.fill("#timeline-search", "aten::mm")
    page.press("#timeline-search", "Enter")
    carried = set()
    for w in snap["windows"]:
        if w["mode"] == "events":
            n = w["events"]["name"]
            carried |= {r for r, i in zip(w["events"]["row"], n["index"]) if "aten::mm" in n["strings"][i].lower()}
    tl.wait(f"document.getElementById('timeline-hits').dataset.total === '{len(carried)}'")
    assert len(carried) > 0
    tl.wait(f"document.getElementById('timeline-details').dataset.row !== '{det['op']['row']}'"
            " && document.getElementById('timeline-details').dataset.state === 'ready'")
    row = int(tl.data("selected").split(":")[1])
    assert row in carried
    _check_details(page, event_details(trace, 0, row))
    tl.shot("timeline-report-search.png")
    assert tl.errors == [] and set(tl.requests) == {out.as_uri()}
    page.close()


def test_diff_report_carries_aligned_timelines(browser: Any, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``stepscope diff BASE NEW --html``: the aligned view draws both runs at the carried step pair."""

    base, new = DATA / "h100_cuda_train" / "base", DATA / "h100_cuda_train" / "fixed"
    out, page, tl, sel, data = _open_diff_report(browser, tmp_path, base, new, capsys, "data-fetches")
    runs = data["runs"]
    sides = [runs[s]["info"]["ranks"][0] for s in ("base", "new")]
    snaps = [runs[s]["timeline"][str(r["rank"])] for s, r in zip(("base", "new"), sides)]
    k = next(i for i, s in enumerate(sides[0]["steps"]) if s["step"] == snaps[0]["step"])
    assert sides[1]["steps"][k]["step"] == snaps[1]["step"]  # the same ordinal on both sides
    assert tl.data("aligned", sel) == str(k)
    assert [float(x) for x in tl.data("offsets", sel).split(",")] == [float(r["steps"][k]["start_ns"]) for r in sides]
    assert len(tl.layout(sel)["heads"]) == 2
    # the view spans BASE's longer step; zoom in on NEW's (its events are exact there)
    step_new = sides[1]["steps"][k]
    lay, (a, b) = tl.layout(sel), tl.view(sel)
    page.locator(sel).scroll_into_view_if_needed()
    box = page.locator(sel).bounding_box()
    mid = (step_new["end_ns"] - step_new["start_ns"]) / 2
    x = box["x"] + lay["gutter"] + (mid - a) / (b - a) * (lay["width"] - lay["gutter"])
    for _ in range(4):
        page.mouse.move(x, box["y"] + 60)
        page.mouse.wheel(0, -300)
        page.wait_for_timeout(50)
    tl.wait(f"document.querySelector('{sel}').dataset.modes.split(',')[1] === 'events'")
    exact = next(w for w in snaps[1]["windows"] if w["mode"] == "events")
    ev = exact["events"]
    a, b = tl.view(sel)
    off = float(tl.data("offsets", sel).split(",")[1])
    inside = [j for j, kind in enumerate(ev["kind"]["index"]) if ev["kind"]["strings"][kind] == "kernel"
              and a < ev["ts_ns"][j] - off and ev["ts_ns"][j] + ev["dur_ns"][j] - off < b]
    i = max(inside, key=lambda j: ev["dur_ns"][j])  # the widest kernel of NEW in view
    x, y = tl.point(1, ev["track"][i], ev["ts_ns"][i], ev["dur_ns"][i], 0, True, sel)
    page.mouse.click(x, y)
    tl.wait(f"document.querySelector('#diff-timeline #timeline-details').dataset.row === '{ev['row'][i]}'")
    assert page.locator("#diff-timeline #tl-det-name").text_content() == ev["name"]["strings"][ev["name"]["index"][i]]
    tl.shot("timeline-diff-report.png", element="#diff-timeline")
    assert tl.errors == [] and set(tl.requests) == {out.as_uri()}
    page.close()


def _open_diff_report(browser: Any, tmp_path: Path, base: Path, new: Path, capsys: pytest.CaptureFixture[str],
                      ready: str) -> tuple[Path, Any, Tl, str, dict[str, Any]]:
    """``stepscope diff BASE NEW --html`` written and opened: the file, the page, its timeline helper,
    the aligned canvas' selector (waited for until it has the ``ready`` attribute) and the document."""
    from tests.unit.ingest.test_bad_input import run_main

    out = tmp_path / "diff.html"
    res = run_main(["diff", str(base), str(new), "--html", str(out)], capsys)
    assert res.returncode == 0, res.stderr
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    tl = Tl(page, out.as_uri())
    page.goto(out.as_uri())
    sel = "#diff-timeline #timeline-canvas"
    page.wait_for_selector(f"{sel}[{ready}]", timeout=60_000)
    return out, page, tl, sel, json.loads(page.locator("#stepscope-doc").text_content() or "{}")


def test_diff_report_aligns_every_rank(browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``diff --html`` of two two-rank runs carries both ranks of each: the picker shows rank 1 or both
    stacked at the same step ordinal, and an event of NEW's rank 1 shows its details offline."""
    import stepscope
    from stepscope.analysis.timeline_event import event_details

    new_dir = tmp_path / "ddp_b"
    shutil.copytree(DATA / "cpu_ddp_2rank", new_dir)
    out, page, tl, sel, data = _open_diff_report(browser, tmp_path, DATA / "cpu_ddp_2rank", new_dir, capsys,
                                                 "data-aligned")
    infos = [data["runs"][s]["info"]["ranks"] for s in ("base", "new")]
    assert [[r["rank"] for r in i] for i in infos] == [[0, 1], [0, 1]]
    k = int(tl.data("aligned", sel))
    assert all(data["runs"][s]["timeline"][str(r)]["step"] == infos[0][0]["steps"][k]["step"]
               for s in ("base", "new") for r in (0, 1))  # one step ordinal on every rank and side
    _aligned_ranks(tl, sel, infos)
    tl.wait(f"document.querySelector('{sel}').dataset.modes.split(',')[3] === 'events'")
    snap = data["runs"]["new"]["timeline"]["1"]
    exact = next(w for w in snap["windows"] if w["mode"] == "events")
    ev = exact["events"]
    a, b = tl.view(sel)
    off = float(tl.data("offsets", sel).split(",")[3])
    inside = [j for j, kind in enumerate(ev["kind"]["index"]) if ev["kind"]["strings"][kind] == "cpu_op"
              and a < ev["ts_ns"][j] - off and ev["ts_ns"][j] + ev["dur_ns"][j] - off < b]
    j = max(inside, key=lambda i: ev["dur_ns"][i])
    page.locator(sel).scroll_into_view_if_needed()
    tl.wait(f"JSON.parse(document.querySelector('{sel}').dataset.layout).lanes"
            f".some((ln) => ln.g === 3 && ln.track === {ev['track'][j]})")
    x, y = tl.point(3, ev["track"][j], ev["ts_ns"][j], ev["dur_ns"][j], ev["depth"][j], False, sel)
    page.mouse.click(x, y)
    tl.wait(f"document.querySelector('#diff-timeline #timeline-details').dataset.row === '{ev['row'][j]}'"
            " && document.querySelector('#diff-timeline #timeline-details').dataset.state === 'ready'")
    assert tl.data("rank", "#diff-timeline #timeline-details") == "1"
    _check_details(page, event_details(stepscope.load(new_dir), 1, ev["row"][j]), "#diff-timeline")
    tl.shot("timeline-diff-report-stacked.png", element="#diff-timeline")
    assert tl.errors == [] and set(tl.requests) == {out.as_uri()}
    page.close()
