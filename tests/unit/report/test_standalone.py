"""The standalone report file (``stepscope report -o``, ``analyze --html``, ``diff --html``) without a
browser: one self-contained page holding the app's every module and the data, nothing to fetch,
no text of the trace able to become markup. (tests/e2e/test_html_browser.py opens it in Chromium.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from stepscope.server.standalone import bundle_js, diff_payload, document_payload, render_page
from tests.unit.ingest.test_bad_input import run_main
from tests.unit.report_docs import EVIL, analysis_doc, diff_doc

STATIC = resources.files("stepscope.server").joinpath("static")


class _Collector(HTMLParser):
    """Tags with attributes and script bodies, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self._in: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "script":
            self._in = a
            self.scripts.append((a, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            a, body = self.scripts[-1]
            self.scripts[-1] = (a, body + data)


def parse(page: str) -> _Collector:
    c = _Collector()
    c.feed(page)
    return c


def test_one_page_with_the_data_and_the_app_and_nothing_to_fetch() -> None:
    doc = analysis_doc()
    page = render_page(document_payload(doc, title=f"title {EVIL}"))
    p = parse(page)
    # exactly two scripts: the inert JSON and the bundled app; no element loads anything
    assert [(a.get("type"), a.get("id")) for a, _ in p.scripts] == [("application/json", "stepscope-doc"),
                                                                   ("module", None)]
    assert not [a for _, a in p.tags if a.get("src", "").strip() and not a["src"].startswith("data:")]
    assert not [a for t, a in p.tags if t == "link" and not a.get("href", "").startswith("data:")]
    csp = next(a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp
    for needle in ("http://", "https://", "/static/", "@import", "url("):
        assert needle not in page.replace('"http://www.w3.org/2000/svg"', "")
    data = json.loads(p.scripts[0][1])
    assert data["kind"] == "run" and data["doc"] == doc  # the whole document, every kernel of it
    assert len(data["doc"]["ranks"][0]["kernels"]) == len(doc["ranks"][0]["kernels"]) == 83


def test_no_text_of_the_trace_becomes_markup() -> None:
    page = render_page(document_payload(analysis_doc(), title=f"t {EVIL}"))
    assert EVIL not in page and "</script>" not in page.split('id="stepscope-doc">', 1)[1].split("</script>")[0]
    assert "<title>t &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</title>" in page
    tags = parse(page).tags
    assert not [t for t, _ in tags if t in ("b", "iframe", "object", "embed")]
    assert [a["src"][:26] for t, a in tags if t == "img"] == ["data:image/svg+xml;base64,"]  # the brand icon only


def test_the_bundle_holds_every_module_once_in_dependency_order() -> None:
    js = bundle_js()
    names = [n for n in re.findall(r'^__modules\["([a-z_]+\.js)"\] = ', js, re.M)]
    shipped = sorted(f.name for f in STATIC.iterdir() if f.name.endswith(".js"))
    assert sorted(names) == shipped and len(set(names)) == len(names)
    assert names[-1] == "app.js" and names.index("util.js") < names.index("data.js") < names.index("views_more.js")
    assert not re.search(r"^\s*(import|export)\s", js, re.M)  # one classic scope per module, no ES syntax left
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed: the bundle's syntax is checked by the browser tests")
    res = subprocess.run([node, "--check", "--input-type=module"], input=js, capture_output=True, text=True,
                         timeout=60, check=False)
    assert res.returncode == 0, res.stderr


def test_diff_payload_and_its_page() -> None:
    doc = diff_doc(gate_passed=False)
    page = render_page(diff_payload(doc, title="nw0 → nw4"))
    data = json.loads(parse(page).scripts[0][1])
    assert data["kind"] == "diff" and data["diff"] == doc and "doc" not in data


def _embedded(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(parse(path.read_text(encoding="utf-8")).scripts[0][1])
    return data


def test_report_and_analyze_write_the_app_with_the_trace_data(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The embedded sample trace: report -o and analyze --html write the same app with the document
    ``analyze --json`` prints, the memory curves, the step windows and a timeline snapshot."""
    out = tmp_path / "r.html"
    assert run_main(["report", "--no-cache", "-o", str(out)], capsys).returncode == 0
    res = run_main(["analyze", "--no-cache", "--json"], capsys)
    doc = json.loads(res.stdout)
    data = _embedded(out)
    assert data["doc"] == doc
    rank = str(doc["ranks"][0]["rank"])
    assert set(data["memory"]) == set(data["timeline"]) == {rank}
    info = data["info"]["ranks"][0]
    assert [s["step"] for s in info["steps"]] == [int(s["step"]) for s in doc["ranks"][0]["steps"]]
    snap = data["timeline"][rank]
    assert snap["step"] in [s["step"] for s in info["steps"]] and len(snap["windows"]) == 2
    other = tmp_path / "a.html"
    assert run_main(["analyze", "--no-cache", "--html", str(other)], capsys).returncode == 0
    assert _embedded(other)["doc"] == doc


def test_saved_document_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "saved.json"
    doc = analysis_doc()
    saved.write_text(json.dumps(doc))
    out = tmp_path / "s.html"
    assert run_main(["report", str(saved), "-o", str(out)], capsys).returncode == 0
    data = _embedded(out)
    assert data["doc"] == doc and data["timeline"] == {} and data["memory"] == {}


def test_the_timeline_snapshot_ranks_put_the_culprits_first() -> None:
    from stepscope.server.standalone import SNAPSHOT_RANKS, _snapshot_ranks

    doc = {"cluster": {"slow_ranks": [5, 3], "arrivals": {"culprits": [{"rank": 9}, {"rank": 3}]}}}
    assert _snapshot_ranks(doc, list(range(12))) == [3, 9, 5, 0, 1, 2, 4, 6][:SNAPSHOT_RANKS]
    assert _snapshot_ranks({"cluster": None}, [4, 2]) == [4, 2]


def test_report_carries_an_allocator_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``report --snapshot S`` (with the saved document, and alone): what the server answers about the
    snapshot, precomputed — the summary, each device's whole curve then windows around its peak, the
    largest allocations live at the peak; --md refuses it; a hostile pickle is one line, exit 2."""
    from stepscope.analysis.allocator import curve_window
    from stepscope.server import snapshots
    from stepscope.server.discover import RunEntry
    from tests.snapshot_builder import two_devices, write

    snap = write(tmp_path / "two.pickle", two_devices())
    res = snapshots.analyse_snapshot(RunEntry("x", snap.name, snap, "snapshot"))
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(analysis_doc()))
    for args, kind in (([str(saved)], "run"), ([], "snapshot")):
        out = tmp_path / f"{kind}.html"
        assert run_main(["report", *args, "--snapshot", str(snap), "-o", str(out)], capsys).returncode == 0
        data = _embedded(out)
        carried = data["snapshot"]
        assert data["kind"] == kind and carried["summary"] == json.loads(res.doc)
        assert sorted(carried["curves"]) == sorted(carried["allocations"]) == ["0", "1"]
        for dev in (0, 1):
            h = next(x for x in carried["summary"]["history"] if x["device"] == dev)
            windows = carried["curves"][str(dev)]
            assert windows[0] == json.loads(json.dumps(curve_window(res.snap, dev, 0.0, h["duration_ms"], 800)))
            assert all(w["start_ms"] <= h["peak_ms"] <= w["end_ms"] for w in windows)
            assert [round((w["end_ms"] - w["start_ms"]) / h["duration_ms"], 4) for w in windows] == \
                [1.0, 0.25, 0.0625, 0.02, 0.0039]
            assert carried["allocations"][str(dev)] == json.loads(snapshots.allocations(res, dev, 0, 100))
    assert run_main(["report", "--md", "--snapshot", str(snap)], capsys).returncode == 2
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(b"\x80\x04cos\nsystem\n(S'true'\ntR.")
    res2 = run_main(["report", "--snapshot", str(bad), "-o", str(tmp_path / "b.html")], capsys)
    assert res2.returncode == 2 and "bad.pickle" in res2.stderr and "Traceback" not in res2.stderr


def test_a_diff_report_aligns_every_common_rank(tmp_path: Path) -> None:
    """``aligned_runs`` on two two-rank runs: the compared rank first, then the other; every snapshot at
    the same step ordinal, on every rank and side; ``max_ranks`` bounds them."""
    import stepscope
    from stepscope.server.standalone import aligned_runs

    ddp = Path(__file__).resolve().parents[2] / "data" / "cpu_ddp_2rank"
    trace = stepscope.load(ddp)
    runs = aligned_runs(trace, 1, trace, 1)
    for side in ("base", "new"):
        infos = runs[side]["info"]["ranks"]
        assert [i["rank"] for i in infos] == [1, 0] and set(runs[side]["timeline"]) == {"1", "0"}
        k = [s["step"] for s in infos[0]["steps"]].index(runs[side]["timeline"]["1"]["step"])
        assert runs[side]["timeline"]["0"]["step"] == infos[1]["steps"][k]["step"]
        assert all(runs[side]["timeline"][r]["details"] for r in ("0", "1"))
    assert [i["rank"] for i in aligned_runs(trace, 0, trace, 0, max_ranks=1)["new"]["info"]["ranks"]] == [0]
