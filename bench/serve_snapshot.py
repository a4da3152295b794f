"""``stepscope serve`` on a large allocator snapshot: open time, the server's RSS, and what the browser receives.

    python bench/serve_snapshot.py --mb 1024      # ~1 GB snapshot (bench/make_snapshot.py), written once
    python bench/serve_snapshot.py --path SNAP.pickle

The snapshot is served from a directory of its own (``/tmp/stepscope_serve_snap_<mb>/``) by a real
``python -m stepscope serve DIR --no-browser`` process with a fresh cache; the server reads it in its
preload thread. Measured:

* ``open_s``: from the server's start until the runs list says the snapshot is ``ready`` (read and
  summarised), ``cpu_s_at_open`` the server's CPU seconds by then (user + system: a loaded box
  inflates the wall time, not this), and ``discover_s``: until the server answered its first request;
* the server's RSS (``VmRSS``) and peak (``VmHWM``) after opening and after the first view;
* the first view as headless Chromium loads it (``#/run/<id>/snapshot``, Playwright; without it the
  same API answers are fetched with urllib): bytes received in all (page, scripts, API) and from the
  API, the number of requests and the largest answer; then one zoom (a window of 1/50 of the history)
  and its bytes.

One JSON line is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _status(pid: int) -> dict[str, float]:
    """The process's RSS, peak RSS and CPU seconds so far (user + system: what a loaded box does not inflate)."""
    with open(f"/proc/{pid}/status") as fh:
        kb = {line.split(":")[0]: int(line.split()[1]) for line in fh if line.startswith(("VmRSS", "VmHWM"))}
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"rss_mib": round(kb["VmRSS"] / 1024, 1), "peak_mib": round(kb["VmHWM"] / 1024, 1), "cpu_s": round(cpu_s, 1)}


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=600) as r:
        data: bytes = r.read()
        return data


def _browser_view(base: str, rid: str) -> dict[str, Any]:
    """The first view in headless Chromium: every response's body size."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(REPO / "tests"))
    from browser import ARGS, CHROMIUM

    sizes: list[tuple[str, int]] = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = b.new_page(viewport={"width": 1400, "height": 900})
        responses: list[Any] = []
        page.on("response", lambda r: responses.append(r))
        t = time.perf_counter()
        page.goto(f"{base}/#/run/{rid}/snapshot")
        page.wait_for_selector("#snap-alloc-table tbody tr", timeout=600_000)
        shown_s = time.perf_counter() - t
        sizes = [(r.url, len(r.body())) for r in responses]
        b.close()
    return {"how": "chromium", "first_view_s": round(shown_s, 2), "sizes": sizes}


def _urllib_view(base: str, rid: str, device: int, duration_ms: float) -> dict[str, Any]:
    urls = [f"{base}/", f"{base}/api/v1/runs", f"{base}/api/v1/runs/{rid}/snapshot",
            f"{base}/api/v1/runs/{rid}/snapshot/curve?device={device}&start_ms=0&end_ms={duration_ms}&points=800",
            f"{base}/api/v1/runs/{rid}/snapshot/allocations?device={device}&offset=0&limit=25"]
    t = time.perf_counter()
    sizes = [(u, len(_get(u))) for u in urls]
    return {"how": "urllib (API answers and the page; no scripts)", "first_view_s": round(time.perf_counter() - t, 2),
            "sizes": sizes}


def _snapshot(mb: int, path: Path | None) -> Path:
    if path is not None:
        return path
    made = Path(f"/tmp/stepscope_serve_snap_{mb}/snapshot.pickle")
    if not made.exists():
        made.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REPO / "bench" / "make_snapshot.py"), str(made), "--mb", str(mb)],
                       check=True)
    return made


def _start(root: Path, cache: str) -> tuple[subprocess.Popen[str], str, float]:
    env = {**os.environ, "STEPSCOPE_CACHE_DIR": cache, "PYTHONPATH": str(REPO)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "stepscope", "serve", str(root), "--no-browser"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"(http://127\.0\.0\.1:\d+)/", proc.stdout.readline() if proc.stdout else "")
    if not m:
        proc.kill()
        raise SystemExit("the server did not print its URL")
    return proc, m.group(1), t0


def _wait_ready(base: str, t0: float) -> tuple[str, float, float]:
    first = None
    while True:
        try:
            runs = json.loads(_get(base + "/api/v1/runs"))["runs"]
        except OSError:
            time.sleep(0.05)
            continue
        first = first or time.perf_counter() - t0
        (run,) = runs
        if run["state"] in ("ready", "error"):
            if run["state"] == "error":
                raise SystemExit(f"the snapshot could not be read: {run.get('error')}")
            return str(run["id"]), first, time.perf_counter() - t0
        time.sleep(0.1)


def measure(snap: Path, browser: bool) -> dict[str, Any]:
    root = snap.parent
    cache = tempfile.mkdtemp(prefix="stepscope-serve-snap-")
    proc, base, t0 = _start(root, cache)
    try:
        rid, discover_s, open_s = _wait_ready(base, t0)
        opened = _status(proc.pid)
        doc = json.loads(_get(f"{base}/api/v1/runs/{rid}/snapshot"))
        h = max(doc["history"], key=lambda x: x["peak_live_bytes"])
        view = _browser_view(base, rid) if browser else _urllib_view(base, rid, h["device"], h["duration_ms"])
        after = _status(proc.pid)
        span = h["duration_ms"] / 50
        lo = max(0.0, h["peak_ms"] - span / 2)
        t = time.perf_counter()
        zoom = _get(f"{base}/api/v1/runs/{rid}/snapshot/curve?device={h['device']}&start_ms={lo}"
                    f"&end_ms={lo + span}&points=800")
        zoom_s = time.perf_counter() - t
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(cache, ignore_errors=True)
    api = [n for u, n in view["sizes"] if "/api/" in u]
    return {"snapshot": str(snap), "file_mb": round(snap.stat().st_size / 1e6, 1),
            "entries": sum(doc["actions"].values()), "discover_s": round(discover_s, 2), "open_s": round(open_s, 2),
            "cpu_s_at_open": opened["cpu_s"], "rss_after_open_mib": opened["rss_mib"],
            "peak_after_open_mib": opened["peak_mib"],
            "rss_after_first_view_mib": after["rss_mib"], "peak_after_first_view_mib": after["peak_mib"],
            "first_view": view["how"], "first_view_s": view["first_view_s"], "requests": len(view["sizes"]),
            "received_kb": round(sum(n for _, n in view["sizes"]) / 1e3, 1),
            "api_received_kb": round(sum(api) / 1e3, 1),
            "largest_answer_kb": round(max(api, default=0) / 1e3, 1), "zoom_kb": round(len(zoom) / 1e3, 1),
            "zoom_points": len(json.loads(zoom)["time_ms"]), "zoom_s": round(zoom_s, 3),
            "peak_live_bytes": h["peak_live_bytes"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=1024, help="size passed to make_snapshot.py (MiB of entries)")
    ap.add_argument("--path", type=Path, default=None,
                    help="a snapshot to serve (its directory is served: keep it alone there)")
    ap.add_argument("--no-browser", action="store_true", help="fetch the first view's answers with urllib")
    a = ap.parse_args()
    browser = not a.no_browser and Path("/usr/bin/chromium").exists()
    if browser:
        try:
            import playwright  # noqa: F401
        except ImportError:
            browser = False
    print(json.dumps(measure(_snapshot(a.mb, a.path), browser)))


if __name__ == "__main__":
    main()
