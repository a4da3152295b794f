"""The HTML report in a real headless Chromium (Debian's, driven by Playwright).

Opens the report of the ``kineto_tb_plugin`` nw0 trace: no console error, no network request,
the verdict and findings visible, the step chart holding the numbers of the JSON document, the
file under 3 MB. Set ``STEPSCOPE_SCREENSHOT_DIR`` to keep the screenshots.
Setup: ``scripts/setup_browser.sh`` (installs chromium and playwright; never ``playwright install``).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import launch, record

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
NW0 = TRACES / "kineto_tb_plugin" / "resnet50_num_workers_0"
MAX_BYTES = 3 * 2**20


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    if not NW0.is_dir():
        pytest.skip(f"real trace not found at {NW0} (the shared trace set is not beside the repo)")
    from stepscope.cli.report_cmd import _from_trace
    from stepscope.report.html.build import write_text

    doc, page = _from_trace(str(NW0), None, None, True, None, ())
    out = tmp_path_factory.mktemp("report") / "nw0.html"
    write_text(out, page)
    return doc, out


class Opened:
    """A page loaded in Chromium, with what happened while it loaded."""

    def __init__(self, page: Any, errors: list[str], requests: list[str]) -> None:
        self.page, self.errors, self.requests = page, errors, requests


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    yield from launch()


def open_page(browser: Any, path: Path) -> Opened:
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    record(page, errors, requests)
    page.goto(path.as_uri(), wait_until="load")
    return Opened(page, errors, requests)


@pytest.fixture(scope="module")
def opened(report: tuple[dict[str, Any], Path], browser: Any) -> Opened:
    return open_page(browser, report[1])


def _keep_screenshot(page: Any, name: str, full: bool = False) -> None:
    target = os.environ.get("STEPSCOPE_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=full)


def test_report_is_small_and_loads_clean(report: tuple[dict[str, Any], Path], opened: Opened) -> None:
    _, path = report
    assert path.stat().st_size < MAX_BYTES
    assert opened.errors == []
    assert opened.requests == [path.as_uri()]  # the file itself, nothing else
    _keep_screenshot(opened.page, "report-nw0-top.png")
    _keep_screenshot(opened.page, "report-nw0-full.png", full=True)


def test_verdict_and_findings_visible(report: tuple[dict[str, Any], Path], opened: Opened) -> None:
    doc, _ = report
    page = opened.page
    assert page.locator("#verdict").is_visible()
    if doc["findings"]:
        cards = page.locator("li.finding")
        assert cards.count() == len(doc["findings"])
        assert cards.first.get_attribute("data-rule") == doc["findings"][0]["rule"]
        assert cards.first.is_visible()
    else:
        assert page.locator("#no-findings").is_visible()


def test_timeline_snapshot_drawn(opened: Opened) -> None:
    svg = opened.page.locator("#timeline-chart-r0")
    assert svg.is_visible()
    assert int(svg.get_attribute("data-blocks") or 0) > 100
    assert opened.page.locator("#timeline-chart-r0 rect.band-dataloader").count() >= 1
    box = svg.bounding_box()
    assert box is not None and box["width"] > 800


def test_step_chart_holds_the_json_numbers(report: tuple[dict[str, Any], Path], opened: Opened) -> None:
    doc, _ = report
    steps = doc["ranks"][0]["steps"]
    assert steps, "the nw0 report has no per-step breakdown"
    chart = opened.page.locator("#step-chart-r0")
    assert chart.is_visible()
    got = opened.page.eval_on_selector_all(
        "#step-chart-r0 rect.seg",
        "els => els.map(e => [e.dataset.col, e.dataset.cat, parseFloat(e.dataset.value)])")
    values = {(c, k): v for c, k, v in got}
    for s in steps:
        for key, v in s["breakdown_ms"].items():
            if v and v > 0:
                assert values[(str(s["step"]), key)] == pytest.approx(v, rel=1e-6)
    heights = opened.page.eval_on_selector_all("#step-chart-r0 rect.seg", "els => els.map(e => e.getBBox().height)")
    assert min(heights) > 0


def test_cli_report_and_markdown(tmp_path: Path) -> None:
    if not NW0.is_dir():
        pytest.skip(f"real trace not found at {NW0}")
    import subprocess

    out = tmp_path / "r.html"
    exe = shutil.which("stepscope") or ""
    cmd = [exe] if exe else [sys.executable, "-m", "stepscope"]
    res = subprocess.run([*cmd, "report", str(NW0), "-o", str(out)], capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    assert out.stat().st_size < MAX_BYTES
    md = subprocess.run([*cmd, "report", str(NW0), "--md"], capture_output=True, text=True, timeout=300, check=False)
    assert md.returncode == 0 and md.stdout.startswith("### "), md.stderr


def test_diff_report_in_browser(tmp_path: Path, browser: Any) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from report_docs import diff_doc

    from stepscope.report.html import render_diff_html

    path = tmp_path / "diff.html"
    path.write_text(render_diff_html(diff_doc(gate_passed=True), title="nw0 → nw4"), encoding="utf-8")
    opened = open_page(browser, path)
    assert opened.errors == [] and opened.requests == [path.as_uri()]
    assert opened.page.locator("#gate").get_attribute("data-passed") == "true"
    assert opened.page.locator("#overall-chart rect.seg").count() == 8
    _keep_screenshot(opened.page, "report-diff.png", full=True)


H100_BASE = Path(__file__).resolve().parents[1] / "data" / "h100_cuda_train" / "base"


def test_whatif_section_shows_the_remedies(tmp_path: Path, browser: Any) -> None:
    """The What-if section of the H100 report (a real trace in the repo) shows the document's
    ``remedies``, and a finding with a replayed gain links to its row."""
    from stepscope.cli.report_cmd import _from_trace
    from stepscope.report.html.build import write_text

    doc, page_html = _from_trace(str(H100_BASE), None, None, True, None, ())
    path = tmp_path / "h100.html"
    write_text(path, page_html)
    opened = open_page(browser, path)
    page = opened.page
    sec = doc["ranks"][0]["remedies"]
    assert page.locator("#whatif-r0").is_visible()
    measured = page.locator("#whatif-measured-r0")
    assert float(measured.get_attribute("data-value") or "nan") == pytest.approx(sec["measured_mean_ms"], rel=1e-6)
    for r in sec["remedies"]:
        row = page.locator(f"#whatif-r0-{r['remedy']}")
        assert row.is_visible()
        assert float(row.get_attribute("data-predicted-ms") or "nan") == pytest.approx(r["predicted_mean_ms"], rel=1e-6)
        assert float(row.get_attribute("data-saved-ms") or "nan") == pytest.approx(r["saved_ms"], rel=1e-6, abs=1e-6)
        cells = row.locator("td").all_text_contents()
        assert cells[0] == r["remedy"] and cells[1] == r["basis"]
        assert cells[2] == f"{r['predicted_mean_ms']:,.2f} ms"
        bar = page.locator(f'#whatif-chart-r0 rect[data-name="{r["remedy"]}"][data-side="new"]')
        assert float(bar.get_attribute("data-value") or "nan") == pytest.approx(r["predicted_mean_ms"], rel=1e-6)
    replayed = [f for f in doc["findings"] if "whatif_remedy" in f["evidence"]]
    assert replayed and page.locator("a.whatif-link").count() == len(replayed)
    top = replayed[0]["evidence"]["whatif_remedy"]
    page.click(f'a.whatif-link[href="#whatif-r0-{top}"]')
    assert page.evaluate("location.hash") == f"#whatif-r0-{top}"
    assert page.locator(f"#whatif-r0-{top}").is_visible()
    _keep_screenshot(page, "whatif_report.png")
    assert opened.errors == [] and opened.requests == [path.as_uri()]


def test_whatif_link_switches_to_the_findings_rank(tmp_path: Path, browser: Any) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from report_docs import whatif_doc

    from stepscope.report.html import render_html

    path = tmp_path / "two.html"
    path.write_text(render_html(whatif_doc(ranks=2), title="two ranks"), encoding="utf-8")
    opened = open_page(browser, path)
    page = opened.page
    assert page.locator("#whatif-r0").is_visible() and not page.locator("#whatif-r1").is_visible()
    page.click("a.whatif-link")
    assert page.locator("#whatif-r1-loader-workers").is_visible() and not page.locator("#whatif-r0").is_visible()
    assert page.locator("button[data-rank='1']").get_attribute("class") == "on"
    assert opened.errors == [] and opened.requests == [path.as_uri()]
