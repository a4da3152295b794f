"""Timeline responsiveness in a real browser: first view, pan / zoom / select latency (p50 / p95).

Usage: ``python bench/timeline_interactive.py [RUN_DIR] [--n 40] [--all-ranks]`` (default ``bench/data/kineto_1000mb``,
the directory ``python bench/make_traces.py --sizes 1000`` writes). Needs Debian's chromium and
Playwright (``scripts/setup_browser.sh``). Set ``STEPSCOPE_CACHE_DIR`` to reuse a cache.

Method: ``stepscope serve RUN_DIR`` as a subprocess; once the run is analysed (its time printed, not
counted in the UI numbers), headless Chromium opens the pages. Every latency is measured *in the
page* with ``performance.now()``:

* **first view**: navigation start → the timeline's first window drawn (``data-first-drawn-at``),
  three fresh pages; and navigation → the overview's average step shown.
* **zoom**: a ``wheel`` event on the canvas → two animation frames later (the redraw painted).
* **pan**: a ``mousemove`` of a drag → two animation frames later.
* **refine**: the same gestures → the refetched window (``/timeline``) drawn (includes the 140 ms
  debounce that waits for the gesture to end).
* **select**: a click on an exact event → its details (``/event``) shown in the panel.
* **search**: Enter in the search box → the match count shown.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from browser import ARGS, CHROMIUM

DEFAULT = Path(__file__).resolve().parent / "data" / "kineto_1000mb"
GUTTER = 210

# in the page: one gesture, then wait for two frames (the redraw painted) and for the refetch
GESTURE_JS = """async ([kind, x, y, dx]) => {
  const c = document.getElementById('timeline-canvas');
  const box = c.getBoundingClientRect(), cx = box.left + x, cy = box.top + y;
  const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const before = Number(c.dataset.fetches);
  let t0;
  if (kind === 'zoom') {
    t0 = performance.now();
    c.dispatchEvent(new WheelEvent('wheel', {deltaY: dx, clientX: cx, clientY: cy, bubbles: true, cancelable: true}));
  } else {
    c.dispatchEvent(new MouseEvent('mousedown', {clientX: cx, clientY: cy, bubbles: true}));
    t0 = performance.now();
    c.dispatchEvent(new MouseEvent('mousemove', {clientX: cx + dx, clientY: cy, bubbles: true}));
  }
  await frames();
  const drawn = performance.now() - t0;
  if (kind === 'pan') window.dispatchEvent(new MouseEvent('mouseup', {clientX: cx + dx, clientY: cy, bubbles: true}));
  const tick = () => new Promise((r) => setTimeout(r, 2));
  while (Number(c.dataset.fetches) === before && performance.now() - t0 < 20000) await tick();
  return [drawn, performance.now() - t0, Number(c.dataset.drawMs)];
}"""

SELECT_JS = """async ([x, y, row]) => {
  const c = document.getElementById('timeline-canvas'), p = document.getElementById('timeline-details');
  const box = c.getBoundingClientRect(), cx = box.left + x, cy = box.top + y;
  const t0 = performance.now();
  c.dispatchEvent(new MouseEvent('mousedown', {clientX: cx, clientY: cy, bubbles: true}));
  window.dispatchEvent(new MouseEvent('mouseup', {clientX: cx, clientY: cy, bubbles: true}));
  const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  await frames();
  const outlined = performance.now() - t0;
  while (!(p.dataset.row === String(row) && p.dataset.state === 'ready') && performance.now() - t0 < 5000) {
    await new Promise((r) => requestAnimationFrame(r));
  }
  return [outlined, performance.now() - t0];
}"""

SEARCH_JS = """async (q) => {
  const s = document.getElementById('timeline-search'), h = document.getElementById('timeline-hits');
  s.value = q;
  h.dataset.total = '';
  const t0 = performance.now();
  s.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
  while (!h.dataset.total && performance.now() - t0 < 60000) await new Promise((r) => setTimeout(r, 2));
  return [performance.now() - t0, Number(h.dataset.total)];
}"""


def api(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=600) as r:
        return json.load(r)


def pct(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return f"p50 {statistics.median(xs):7.1f} ms  p95 {p95:7.1f} ms  max {xs[-1]:7.1f} ms  (n={len(xs)})"


def serve(run_dir: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "stepscope", "serve", str(run_dir), "--no-browser"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
    if not m:
        proc.kill()
        raise SystemExit(f"serve did not start: {line!r}")
    return proc, m.group(1)


def wait_ready(base: str) -> tuple[str, float]:
    t0 = time.perf_counter()
    while True:
        runs = api(base, "/api/v1/runs")["runs"]
        if runs and runs[0]["state"] in ("ready", "error"):
            if runs[0]["state"] == "error":
                raise SystemExit(f"the run failed: {runs[0].get('error')}")
            return runs[0]["id"], time.perf_counter() - t0
        time.sleep(0.2)


def first_views(browser: Any, base: str, rid: str) -> None:
    tl, ov = [], []
    for _ in range(3):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/#/run/{rid}/timeline")
        page.wait_for_selector("#timeline-canvas[data-first-drawn-at]", timeout=120_000)
        tl.append(float(page.locator("#timeline-canvas").get_attribute("data-first-drawn-at") or "nan"))
        page.close()
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/#/run/{rid}/overview")
        page.wait_for_selector("#avg-step", timeout=120_000)
        ov.append(float(page.evaluate("performance.now()")))
        page.close()
    print(f"first view, timeline (navigation → first window drawn): {', '.join(f'{x:.0f}' for x in tl)} ms")
    print(f"first view, overview (navigation → average step shown, polled): {', '.join(f'{x:.0f}' for x in ov)} ms")


def gestures(page: Any, n: int) -> None:
    width = page.locator("#timeline-canvas").bounding_box()["width"]
    drawn: dict[str, list[float]] = {"zoom": [], "pan": []}
    refine: list[float] = []
    draw_ms: list[float] = []
    for i in range(n):
        x = GUTTER + (width - GUTTER) * (0.2 + 0.6 * ((i * 37) % 100) / 100)
        zoom = page.evaluate(GESTURE_JS, ["zoom", x, 60, -240 if i % 3 != 2 else 300])
        pan = page.evaluate(GESTURE_JS, ["pan", x, 60, 120 if i % 2 else -120])
        for kind, (d, r, ms) in (("zoom", zoom), ("pan", pan)):
            drawn[kind].append(d)
            refine.append(r)
            draw_ms.append(ms)
    print(f"zoom   (wheel → redraw painted):  {pct(drawn['zoom'])}")
    print(f"pan    (drag move → redraw painted): {pct(drawn['pan'])}")
    print(f"canvas draw alone (JS):              {pct(draw_ms)}")
    print(f"refine (gesture → refetched window drawn, incl. 140 ms debounce): {pct(refine)}")


def selects(page: Any, base: str, rid: str, n: int) -> None:
    info = api(base, f"/api/v1/runs/{rid}/info")["ranks"][0]
    step = info["steps"][len(info["steps"]) // 2]["step"]
    before = int(page.locator("#timeline-canvas").get_attribute("data-fetches") or 0)
    page.select_option("#timeline-step", str(step))
    while int(page.locator("#timeline-canvas").get_attribute("data-fetches") or 0) <= before:
        page.wait_for_timeout(20)
    for _ in range(8):  # zoom in (around the middle) until the events are exact
        if page.locator("#timeline-canvas").get_attribute("data-mode") == "events":
            break
        before = int(page.locator("#timeline-canvas").get_attribute("data-fetches") or 0)
        page.click("button[title='zoom in']")
        while int(page.locator("#timeline-canvas").get_attribute("data-fetches") or 0) <= before:
            page.wait_for_timeout(20)
    layout = json.loads(page.locator("#timeline-canvas").get_attribute("data-layout") or "{}")
    a, b = map(float, (page.locator("#timeline-canvas").get_attribute("data-view") or "0,1").split(","))
    offset = float(page.locator("#timeline-canvas").get_attribute("data-offsets") or 0)
    q = f"rank=0&start_ns={int(offset + a)}&end_ns={int(offset + b)}&max_items=4000"
    w = api(base, f"/api/v1/runs/{rid}/timeline?{q}")
    if w["mode"] != "events":
        print(f"select: step {step} still aggregated after zooming in; skipped")
        return
    lanes = {(ln["track"]): ln for ln in layout["lanes"]}
    gpu = {t["id"] for t in w["tracks"] if t["kind"] == "gpu_stream"}
    ev = w["events"]
    order = sorted(range(len(ev["row"])), key=lambda i: -ev["dur_ns"][i])
    picks = [i for i in order if ev["track"][i] in lanes and ev["depth"][i] < lanes[ev["track"][i]]["rows"]][: n]
    outlined, shown, missed = [], [], 0
    for i in picks:
        ln = lanes[ev["track"][i]]
        mid = max(ev["ts_ns"][i] - offset, a) + min(ev["dur_ns"][i], b - max(ev["ts_ns"][i] - offset, a)) / 2
        x = GUTTER + (mid - a) / (b - a) * (layout["width"] - GUTTER)
        annot = ev["kind"][i] == "gpu_user_annotation"  # a thin band on top of its stream
        y = ln["y"] + (2 if annot else 5 + (ln["h"] - 5) / 2 if ev["track"][i] in gpu else ev["depth"][i] * 15 + 7.5)
        o, s = page.evaluate(SELECT_JS, [x, y, ev["row"][i]])
        if s >= 5000:
            missed += 1
            continue
        outlined.append(o)
        shown.append(s)
    print(f"select (click → outlined, painted):  {pct(outlined)}")
    print(f"select (click → details from /event shown): {pct(shown)}; {missed} clicks missed their event")
    direct = []
    for i in [j for j in order if j not in set(picks)][:n]:  # other events, straight from Python
        t0 = time.perf_counter()
        api(base, f"/api/v1/runs/{rid}/event?rank=0&row={ev['row'][i]}")
        direct.append(1000 * (time.perf_counter() - t0))
    print(f"/event from Python (HTTP round trip, not cached): {pct(direct)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--n", type=int, default=40, help="gestures of each kind")
    ap.add_argument("--all-ranks", action="store_true", help="every rank on one axis (a multi-rank run)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    proc, base = serve(args.run_dir)
    try:
        rid, ready_s = wait_ready(base)
        summary = api(base, "/api/v1/runs")["runs"][0]
        print(f"{args.run_dir.name}: {summary.get('events', 0):,} events; "
              f"serve → run analysed (not in the UI numbers): {ready_s:.1f} s")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            first_views(browser, base, rid)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/#/run/{rid}/timeline")
            page.wait_for_selector("#timeline-canvas[data-first-drawn-at]", timeout=120_000)
            if args.all_ranks:
                t0 = time.perf_counter()
                page.check("#timeline-all-ranks")
                page.wait_for_selector("#timeline-canvas[data-first-drawn-at]", timeout=120_000)
                heads = len(json.loads(page.locator("#timeline-canvas").get_attribute("data-layout") or "{}")["heads"])
                print(f"all ranks: {heads} ranks drawn {1000 * (time.perf_counter() - t0):.0f} ms after the click")
            gestures(page, args.n)
            if not args.all_ranks:
                selects(page, base, rid, args.n)
            for q in ("conv", "aten::add_"):
                ms, total = page.evaluate(SEARCH_JS, q)
                print(f"search {q!r}: {total:,} matches, Enter → count shown {ms:.0f} ms")
            browser.close()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
