"""The standalone HTML report (the web UI's own app with the data embedded) in a real headless
Chromium (Debian's, driven by Playwright), opened from disk.

Every view of the nw0 report renders with no console error and no request but the file itself;
the numbers shown are those of the embedded JSON, which is the document ``analyze --json`` writes.
The H100 report (a trace in the repo) shows its replayed remedies and refuses a new replay with a
sentence; a diff report and a two-rank saved document work the same way. Set
``STEPSCOPE_SCREENSHOT_DIR`` to keep a screenshot of each view.
Setup: ``scripts/setup_browser.sh`` (installs chromium and playwright; never ``playwright install``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import launch, record

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
NW0 = TRACES / "kineto_tb_plugin" / "resnet50_num_workers_0"
H100_BASE = Path(__file__).resolve().parents[1] / "data" / "h100_cuda_train" / "base"
DLRM = TRACES / "param_dlrm" / "dlrm_8rank_v100"
MAX_BYTES = 3 * 2**20
VIEWS = ["overview", "steps", "kernels", "operators", "modules", "memory", "distributed", "graphs", "timeline",
         "whatif"]


def _write_trace_report(trace: Path, out: Path) -> dict[str, Any]:
    return _write_trace_report_of(str(trace), out)


def _write_trace_report_of(trace: str | None, out: Path) -> dict[str, Any]:
    from stepscope.cli.report_cmd import _from_trace
    from stepscope.server.standalone import write_text

    doc, page = _from_trace(trace, None, None, True, None, ())
    write_text(out, page)
    return doc


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    if not NW0.is_dir():
        pytest.skip(f"real trace not found at {NW0} (the shared trace set is not beside the repo)")
    out = tmp_path_factory.mktemp("report") / "nw0.html"
    return _write_trace_report(NW0, out), out


class Opened:
    """A page loaded in Chromium, with what happened while it loaded."""

    def __init__(self, page: Any, path: Path, errors: list[str], requests: list[str]) -> None:
        self.page, self.path, self.errors, self.requests = page, path, errors, requests

    def go(self, view: str, rank: int | None = None, wait: str = "main#view section.card") -> None:
        q = "" if rank is None else f"?rank={rank}"
        self.page.evaluate(f"location.hash = '#/run/report/{view}{q}'")
        self.page.wait_for_selector(f"nav a.on[data-view='{view}']", timeout=30_000)
        self.page.wait_for_selector(wait, timeout=30_000)

    def check_clean(self) -> None:
        assert self.errors == []
        assert self.requests == [self.path.as_uri()]  # the file itself, nothing else
        assert self.page.locator("section.card.error").count() == 0


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    yield from launch()


def open_page(browser: Any, path: Path, wait: str = "main#view section.card") -> Opened:
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    record(page, errors, requests)
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_selector(wait, timeout=30_000)
    return Opened(page, path, errors, requests)


@pytest.fixture(scope="module")
def opened(report: tuple[dict[str, Any], Path], browser: Any) -> Opened:
    return open_page(browser, report[1])


def _keep_screenshot(page: Any, name: str, full: bool = False) -> None:
    target = os.environ.get("STEPSCOPE_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=full)


def embedded(opened: Opened) -> dict[str, Any]:
    text = opened.page.locator("#stepscope-doc").text_content()
    data: dict[str, Any] = json.loads(text or "{}")
    return data


def test_report_is_small_and_loads_clean(report: tuple[dict[str, Any], Path], opened: Opened) -> None:
    doc, path = report
    assert path.stat().st_size < MAX_BYTES
    opened.check_clean()
    data = embedded(opened)
    assert data["format"] == "stepscope-standalone" and data["kind"] == "run"
    assert data["doc"] == json.loads(json.dumps(doc))  # the whole §12 document, as analyze --json has it
    avg = opened.page.locator("#avg-step").get_attribute("data-value")
    assert float(avg or "nan") == doc["ranks"][0]["overview"]["avg_step_ms"]


def test_every_view_renders(opened: Opened) -> None:
    for view in VIEWS:
        opened.go(view)
        opened.page.wait_for_timeout(150)
        _keep_screenshot(opened.page, f"report-{view}.png")
        opened.check_clean()


def test_verdict_and_findings_visible(report: tuple[dict[str, Any], Path], opened: Opened) -> None:
    doc, _ = report
    opened.go("overview", wait="#verdict")
    page = opened.page
    assert page.locator("#verdict").text_content() == doc["verdicts"][0]["text"]
    cards = page.locator("li.finding")
    assert cards.count() == len(doc["findings"]) > 0
    assert cards.first.get_attribute("data-rule") == doc["findings"][0]["rule"]
    page.locator("details.evidence summary").first.click()
    assert page.locator("details.evidence dl dt").first.is_visible()


def test_step_chart_holds_the_json_numbers(report: tuple[dict[str, Any], Path], opened: Opened) -> None:
    doc, _ = report
    steps = doc["ranks"][0]["steps"]
    assert steps, "the nw0 report has no per-step breakdown"
    opened.go("steps", wait="#step-chart rect.seg")
    got = opened.page.eval_on_selector_all(
        "#step-chart rect.seg", "els => els.map(e => [e.dataset.col, e.dataset.cat, parseFloat(e.dataset.value)])")
    values = {(c, k): v for c, k, v in got}
    for s in steps:
        for key, v in s["breakdown_ms"].items():
            if v and v > 0:
                assert values[(str(s["step"]), key)] == pytest.approx(v, rel=1e-9)


def test_kernels_and_modules_show_the_json_rows(report: tuple[dict[str, Any], Path], opened: Opened) -> None:
    doc, _ = report
    r = doc["ranks"][0]
    opened.go("kernels", wait="#kernels-table tbody tr")
    top = max(r["kernels"], key=lambda k: k["total_ms"])
    assert opened.page.locator("#kernels-table tbody tr").first.locator("td").first.text_content() == top["name"]
    if r.get("categories"):
        assert opened.page.locator("#categories-table tbody tr").count() >= 1
    if not r.get("modules"):
        opened.go("modules", wait="#modules p.empty")


def test_module_tree_of_the_sample(tmp_path: Path, browser: Any) -> None:
    """The embedded sample trace records nn.Modules: the tree's rows and times are the document's."""
    path = tmp_path / "sample.html"
    doc = _write_trace_report_of(None, path)
    r = doc["ranks"][0]
    assert r["modules"], "the sample trace has no modules"
    opened = open_page(browser, path)
    opened.go("modules", wait="#modules-table tbody tr")
    roots = [m for m in r["modules"] if m["parent"] is None]
    assert opened.page.locator("#modules-table tbody tr[data-depth='0']").count() == len(roots)
    opened.page.click("#modules-expand")
    assert opened.page.locator("#modules-table tbody tr").count() == len(r["modules"])
    deepest = max(r["modules"], key=lambda m: m["depth"])
    row = opened.page.locator(f"#modules-table tbody tr[data-module='{deepest['name']}']")
    assert row.locator("td[data-key='host_self_ms']").text_content() == _ms(deepest["host_self_ms"])
    _keep_screenshot(opened.page, "report-modules-sample.png")
    opened.check_clean()


def _ms(v: float) -> str:
    """util.js fmtMs."""
    d = 1 if abs(v) >= 100 else 2 if abs(v) >= 10 else 3
    return f"{v:.{d}f} ms"


def test_memory_and_timeline_come_from_the_file(opened: Opened) -> None:
    data = embedded(opened)
    opened.go("memory", wait="#memory-chart-0 polyline")
    curves = [c for c in data["memory"]["0"]["curves"] if len(c["ts_ms"]) > 1]
    assert opened.page.locator("svg[id^='memory-chart-']").count() == len(curves) > 1
    # one time axis for GPU and CPU (0.0–962.9 ms against 0.1–1049.2 ms before), so the peaks line up
    axes = [opened.page.locator(f"#memory-chart-{i} text.xtick").all_text_contents() for i in range(len(curves))]
    assert axes[0][0] == "0 ms" and all(a == axes[0] for a in axes), axes
    _one_precision(opened.page, len(curves))
    opened.go("timeline", wait="#timeline-canvas[data-fetches]")
    snap = data["timeline"]["0"]
    assert snap["step"] is not None and opened.page.locator("#timeline-step").input_value() == str(snap["step"])
    opened.page.wait_for_selector("#timeline-canvas[data-mode='events']", timeout=10_000)
    note = opened.page.locator("#timeline-snapshot").text_content() or ""
    assert f"step {snap['step']}'s events" in note and "for this for" not in note and ".;" not in note, note
    assert note.endswith("(open the trace with `stepscope serve` for the rest)."), note
    assert opened.page.locator("#timeline h2").text_content() == "Timeline — rank 0"
    opened.check_clean()


def _one_precision(page: Any, charts: int) -> None:
    """The memory charts' y ticks are written with one precision (skew's read "0.625 MiB", "1.875 MiB", "2.5 MiB")."""
    for i in range(charts):
        ys = page.locator(f"#memory-chart-{i} text.ytick").all_text_contents()
        assert len({len(y.split(" ")[0].partition(".")[2]) for y in ys}) == 1 and ys[0].startswith("0"), ys


def _lane_colours(page: Any, labels: list[str]) -> set[tuple[int, int, int]]:
    """The colours drawn along the top of the first row of the timeline lanes labelled ``labels`` (the
    canvas read once: Chromium warns about repeated readbacks)."""
    return {tuple(c) for c in page.evaluate("""(labels) => {
      const c = document.getElementById('timeline-canvas'), L = JSON.parse(c.dataset.layout);
      const r = c.width / L.width, x0 = Math.round(L.gutter * r), out = [];
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (const lane of L.lanes.filter((l) => labels.includes(l.label))) {
        const y = Math.round((lane.y + 3) * r);
        for (let x = x0; x < c.width; x++) { const i = 4 * (y * c.width + x); out.push([px[i], px[i + 1], px[i + 2]]); }
      }
      return out;
    }""", labels)}


def test_skew_timeline_names_its_rank_and_draws_gloo_as_communication(tmp_path: Path, browser: Any) -> None:
    """tests/data/cpu_jobs/skew (2 ranks, gloo on the CPU): the title said "Timeline — run" (resnet's
    "Timeline — rank 0"), the note "…with its details.; search … (open the trace with `stepscope
    serve` for this for the rest)", and gloo:all_reduce was drawn in the annotation colour though the
    step breakdown counts it as communication."""
    skew = Path(__file__).resolve().parents[1] / "data" / "cpu_jobs" / "skew"
    path = tmp_path / "skew.html"
    _write_trace_report(skew, path)
    opened = open_page(browser, path)
    page = opened.page
    opened.go("timeline", rank=1, wait="#timeline-canvas[data-mode='events']")
    assert page.locator("#timeline h2").text_content() == "Timeline — rank 1"
    note = page.locator("#timeline-snapshot").text_content() or ""
    assert note == "This report carries every event of this rank, with its details: search finds any of them.", note
    page.click("#timeline-all-ranks")
    assert page.locator("#timeline h2").text_content() == "Timeline — all 2 ranks"
    page.click("#timeline-all-ranks")
    page.wait_for_selector("#timeline-canvas[data-mode='events']")
    layout = json.loads(page.locator("#timeline-canvas").get_attribute("data-layout") or "{}")
    gloo = [lane["label"] for lane in layout["lanes"] if "gloo" in lane["label"]]
    assert gloo, layout["lanes"]
    communication, annotation = (0x72, 0xB7, 0xB2), (0xC9, 0xB8, 0xA6)
    colours = _lane_colours(page, gloo)
    assert communication in colours and annotation not in colours, colours
    _keep_screenshot(page, "skew-timeline.png")
    opened.go("memory", wait="#memory-chart-0 polyline")
    _one_precision(page, 1)
    opened.check_clean()


def test_whatif_shows_the_carried_replays_and_says_once_a_new_one_needs_the_trace(tmp_path: Path,
                                                                                  browser: Any) -> None:
    """The H100 report's What-if view: each remedy's button shows the prediction the report carries
    (every "replay" button said "A new replay needs the trace…"), the finding's link shows its remedy's,
    and the form, which would need the trace, is disabled under one sentence saying so."""
    path = tmp_path / "h100.html"
    doc = _write_trace_report(H100_BASE, path)
    opened = open_page(browser, path)
    page = opened.page
    sec = doc["ranks"][0]["remedies"]
    replayed = [f for f in doc["findings"] if "whatif_remedy" in f["evidence"]]
    assert replayed and page.locator("a.whatif-link").count() == len(replayed)
    page.locator("a.whatif-link").first.click()
    page.wait_for_selector("#remedies-table")
    shown = [r for r in sec["remedies"] if r["applies"]]  # nothing to change: no row, named once in the card
    for r in sec["remedies"]:
        if not r["applies"]:
            assert page.locator(f"#remedy-{r['remedy']}").count() == 0
            assert r["remedy"] in (page.locator("#remedies p.sub").text_content() or "")
    for r in shown:
        row = page.locator(f"#remedy-{r['remedy']}")
        assert float(row.get_attribute("data-predicted") or "nan") == pytest.approx(r["predicted_mean_ms"], rel=1e-9)
    top = next(r for r in sec["remedies"] if r["remedy"] == replayed[0]["evidence"]["whatif_remedy"])
    assert page.locator(f"#remedy-{top['remedy']}").get_attribute("class") == "remedy on"
    assert page.locator("#whatif-output").get_attribute("data-state") == "document"
    assert float(page.locator("#whatif-mean").get_attribute("data-value") or "nan") == top["predicted_mean_ms"]
    assert page.locator("#whatif-go").is_disabled() and page.locator("#wi-workers").is_disabled()
    flags = [(r, next(iter(r["options"]))) for r in sec["remedies"] if list(r["options"].values()) == [True]]
    assert flags  # a flag's hint is its remedy's basis in this run (the device's numbers in it)
    for r, key in flags:
        assert page.locator(f"#wi-{key}-hint").text_content() == r["basis"], key
    note = page.locator("#whatif-standalone").text_content() or ""
    assert page.locator("#whatif-standalone").is_visible() and "`stepscope serve`" in note
    for r in shown:
        page.click(f"#remedy-{r['remedy']} button.replay")
        mean = page.locator("#whatif-mean")
        assert float(mean.get_attribute("data-value") or "nan") == r["predicted_mean_ms"]
        assert float(mean.get_attribute("data-measured") or "nan") == sec["measured_mean_ms"]
        assert float(page.locator("#whatif-saved").get_attribute("data-value") or "nan") == r["saved_ms"]
        assert page.locator("#whatif-changes").text_content() == r["basis"]
        assert page.locator(f"#remedy-{r['remedy']}").get_attribute("class") == "remedy on"
        assert page.locator("#whatif-error").count() == 0
    assert "needs the trace" not in page.locator("main").inner_text().replace(note, "")
    _keep_screenshot(page, "report-whatif-h100.png", full=True)
    opened.check_clean()


def test_the_straggler_finding_shows_the_documents_job_replay(tmp_path: Path, browser: Any) -> None:
    """DLRM's report: the straggler-rank finding (rank 7) links to the What-if view, which cannot
    replay without the trace and shows what ``cluster.job_whatif`` carries instead: the job's step
    18.711 → 18.202 ms with rank 7 fixed, its form filled with the fix."""
    if not DLRM.is_dir():
        pytest.skip(f"real trace not found at {DLRM} (the shared trace set is not beside the repo)")
    path = tmp_path / "dlrm.html"
    doc = _write_trace_report(DLRM, path)
    jw = doc["cluster"]["job_whatif"]
    fix = next(x for x in jw["fixes"] if x["rank"] == 7)
    opened = open_page(browser, path)
    page = opened.page
    opened.go("overview", rank=7, wait="a.whatif-link[data-remedy=fix-rank]")
    page.click("a.whatif-link[data-remedy=fix-rank]")
    page.wait_for_selector("#whatif-from-document", timeout=30_000)
    assert page.locator("#whatif-output").get_attribute("data-state") == "document"
    mean = page.locator("#whatif-mean")
    measured = float(mean.get_attribute("data-measured") or "nan")
    predicted = float(mean.get_attribute("data-value") or "nan")
    assert (measured, predicted) == (jw["measured_mean_ms"], fix["predicted_mean_ms"])
    assert (round(measured, 3), round(predicted, 3)) == (18.711, 18.202)
    assert "18.71 ms → 18.20 ms" in (mean.text_content() or "")
    assert page.locator("#wi-fix_rank").input_value() == "7"
    assert page.locator("#job-fix-7").get_attribute("class") == "remedy on"
    rows = page.locator("#job-whatif-table tbody tr")
    assert rows.count() == len(jw["fixes"]) + len(jw["remedies"])
    for r in jw["remedies"]:
        shown = page.locator(f"#job-remedy-{r['remedy']}").get_attribute("data-saved")
        assert float(shown or "nan") == r["saved_ms"]
    last = jw["remedies"][-1]  # its button shows the job's replay the report carries
    page.click(f"#job-remedy-{last['remedy']} button.replay")
    assert float(page.locator("#whatif-mean").get_attribute("data-value") or "nan") == last["predicted_mean_ms"]
    assert float(page.locator("#whatif-mean").get_attribute("data-measured") or "nan") == jw["measured_mean_ms"]
    page.click("#job-fix-7 button.replay")
    assert float(page.locator("#whatif-mean").get_attribute("data-value") or "nan") == fix["predicted_mean_ms"]
    _keep_screenshot(page, "report-whatif-dlrm-fix-rank.png", full=True)
    # a finding of the whole job shows on every rank it was found on, as a share of the job's step
    launch = next(f for f in doc["findings"] if f["rule"] == "launch-bound")
    assert 0 in launch["ranks"] and launch["rank"] != 0
    opened.go("overview", rank=0, wait="#findings li.finding[data-rule=launch-bound]")
    gain = page.locator("#findings li.finding[data-rule=launch-bound] .gain").text_content() or ""
    own = launch["evidence"]["per_rank_gain_ms"]["0"]
    assert f"{_ms(launch['est_gain_ms'])} / job step ({launch['est_gain_pct']:.1f} %)" in gain, gain
    assert "ranks 0–7" in gain and f"rank 0 alone {_ms(own)}" in gain, gain
    opened.check_clean()


def test_a_job_bound_by_imbalance_is_never_called_balanced(tmp_path: Path, browser: Any) -> None:
    """tests/data/cpu_jobs/skew: the job is bound by imbalance between ranks (rank 1 late at every
    all-reduce) while their steps are 0.6 % apart; the Ranks card words that figure as what it
    measures, not "(balanced)"."""
    import re

    path = tmp_path / "skew.html"
    doc = _write_trace_report(Path(__file__).resolve().parents[1] / "data" / "cpu_jobs" / "skew", path)
    assert doc["verdicts"][0]["bound"] == "imbalance" and doc["cluster"]["imbalance_of"] == "host"
    opened = open_page(browser, path)
    opened.go("distributed", wait="#cluster p.sub")
    text = opened.page.locator("#cluster p.sub").text_content() or ""
    pct = doc["cluster"]["imbalance_pct"]
    assert text.startswith(f"Per average step. Load imbalance of the model's CPU work (its waits in collectives aside) "
                           f"across ranks {pct:.1f} % (the busiest rank "
                           "over the mean); "
                           "ranks with more work (step): none"), text
    assert not re.search(r"\bbalanced\b", opened.page.locator("main#view").text_content() or "", re.IGNORECASE)
    # a CPU-only job: its overview shows no device figures (they read "–" under GPU / SM / Tensor Core labels)
    opened.go("overview", wait="#verdict")
    stats = opened.page.locator("#overview .stats").text_content() or ""
    assert "job step" in stats and "GPU utilization" not in stats and "Tensor Core" not in stats, stats
    opened.check_clean()


def test_diff_report(tmp_path: Path, browser: Any) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from report_docs import EVIL, diff_doc

    from stepscope.server.standalone import diff_payload, render_page, write_text

    doc = diff_doc(gate_passed=False)
    path = tmp_path / "diff.html"
    write_text(path, render_page(diff_payload(doc, title="nw0 → nw4")))
    opened = open_page(browser, path, wait="#diff-headline")
    page = opened.page
    assert page.locator("#gate").get_attribute("data-passed") == "false"
    assert float(page.locator("#diff-headline").get_attribute("data-new") or "nan") == 141.1
    assert page.locator("#overall-chart rect.seg").count() == 2 * len(doc["overall"])
    assert page.locator("#diff-kernels-table tbody tr").first.locator("td").first.text_content() == EVIL
    assert page.locator("#diff-operators-table tbody tr").count() == 25  # top 25 of 100 by |diff|
    _keep_screenshot(page, "report-diff.png", full=True)
    opened.check_clean()


def test_diff_report_of_two_real_runs(tmp_path: Path, browser: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``stepscope diff nw0 nw4 --html``: every table of the diff document (its unit in the value keys,
    MB for memory), and each side's steps in order on one chart."""
    if not NW0.is_dir():
        pytest.skip(f"real trace not found at {NW0}")
    from tests.unit.ingest.test_bad_input import run_main

    out = tmp_path / "d.html"
    res = run_main(["diff", str(NW0), str(NW0.parent / "resnet50_num_workers_4"), "--no-cache", "--html", str(out)],
                   capsys)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text(encoding="utf-8").split('id="stepscope-doc">', 1)[1].split("</script>")[0])["diff"]
    opened = open_page(browser, out, wait="#diff-headline")
    page = opened.page
    for name in doc["tables"]:
        if doc[name]:
            assert page.locator(f"#diff-{name}-table tbody tr").count() == min(25, len(doc[name]))
    biggest = max(abs(r["diff_mb"] or 0) for r in doc["memory"])
    cells = page.locator("#diff-memory-table tbody tr").first.locator("td").all_text_contents()
    assert doc["tables"]["memory"]["unit"] == "MB" and cells[2].endswith(" MB")
    assert cells[0] in {r["name"] for r in doc["memory"] if abs(r["diff_mb"] or 0) == biggest}
    lines = page.locator("#diff-steps-chart polyline")
    assert [lines.nth(i).get_attribute("data-points") for i in range(2)] == [
        str(len(doc["base"]["per_step"])), str(len(doc["new"]["per_step"]))]
    ticks = page.locator("#diff-steps-chart text.xtick").all_text_contents()  # one per step, none twice
    assert len(ticks) == len(set(ticks)) == max(len(doc["base"]["per_step"]), len(doc["new"]["per_step"]))
    summary = page.locator("#diff-summary").inner_text()
    assert summary.count("Average step") == 1 and doc["narrative"][0].startswith("Average step"), summary
    opened.check_clean()


def test_saved_two_rank_document(tmp_path: Path, browser: Any) -> None:
    """A saved document (no trace): the rank picker switches ranks; memory and timeline say what is missing."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from report_docs import EVIL, whatif_doc

    from stepscope.cli.report_cmd import _from_document
    from stepscope.server.standalone import write_text

    doc = whatif_doc(ranks=2)
    path = tmp_path / "two.html"
    write_text(path, _from_document(doc, str(path), None))
    opened = open_page(browser, path, wait="#verdict, #no-findings, #avg-step")
    page = opened.page
    opened.go("kernels", wait="#kernels-table tbody tr")
    assert EVIL in page.locator("#kernels-table tbody td").all_text_contents()  # shown as text, never markup
    assert page.locator("#rank-picker option").count() == 2
    opened.go("whatif", rank=1, wait="#remedies-table")
    row = page.locator("#remedy-loader-workers")
    assert float(row.get_attribute("data-predicted") or "nan") == pytest.approx(15.91 + 1.0)
    opened.go("distributed", wait="#rank-chart rect.seg")
    assert page.locator("#rank-chart rect.seg").count() == 2 * 4
    roles = page.locator("#arrivals-table tbody tr").all_text_contents()
    assert len(roles) == 2 and "culprit" in roles[0]  # rank 1, the latest (cluster.arrivals)
    opened.go("timeline", wait="#timeline-snapshot")
    assert "no timeline" in (page.locator("#timeline-snapshot").text_content() or "")
    opened.check_clean()


def test_graphs_view_of_replays_compiled_kernels_and_phases(tmp_path: Path, browser: Any) -> None:
    """The hand-made graphs / compiled / phases sections (tests/unit/test_report_device.py): numbers and
    hostile names as the document has them, the missing capture and the mixed step said."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
    from report_docs import EVIL
    from test_report_device import _doc

    from stepscope.cli.report_cmd import _from_document
    from stepscope.server.standalone import write_text

    path = tmp_path / "graphs.html"
    write_text(path, _from_document(_doc(capture=False), str(path), None))
    opened = open_page(browser, path)
    opened.go("graphs", wait="#graph-launches tbody tr")
    page = opened.page
    cells = page.locator("#graph-launches tbody tr").first.locator("td").all_text_contents()
    assert cells[:3] == [EVIL, "421", "10.39 ms"]
    assert "421 of 434 GPU activities" in (page.locator("#graphs p.sub").text_content() or "")
    assert page.locator("#no-capture").is_visible() and page.locator("#graph-capture").count() == 0
    triton = page.locator("#triton-kernels tbody tr").first.locator("td").all_text_contents()
    assert triton[:3] == ["triton_poi_fused_addmm_gelu_view_15", "pointwise", "addmm, gelu, view"]
    assert page.locator("#phase-table tbody td").first.text_content() == "mixed"
    assert page.locator("#mixed-note").is_visible()
    write_text(path, _from_document(_doc(capture=True), str(path), None))
    opened = open_page(browser, path)
    opened.go("graphs", wait="#graph-capture tbody tr")
    assert opened.page.locator("#graph-capture tbody td").first.text_content() == "vllm::moe_forward"
    _keep_screenshot(opened.page, "report-graphs.png", full=True)
    opened.check_clean()


def test_pipeline_and_all_to_all_cards(tmp_path: Path, browser: Any) -> None:
    """The hand-made GPipe and MoE runs (tests/unit/analysis/test_pipeline.py, test_all_to_all.py) in the
    distributed view: one stage row per stage with the hand-computed bubbles, one all-to-all row per rank."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.unit.analysis.test_all_to_all import moe
    from tests.unit.analysis.test_pipeline import gpipe

    for name, make in (("pp", gpipe), ("ep", moe)):
        (tmp_path / name).mkdir()
        make(tmp_path / name)
    for name, wait in (("pp", "#pipeline-table-0 tbody tr"), ("ep", "#all-to-all-table tbody tr")):
        path = tmp_path / f"{name}.html"
        doc = _write_trace_report_of(str(tmp_path / name / "run"), path)
        opened = open_page(browser, path, wait="#verdict, #no-findings, #avg-step")
        opened.go("distributed", wait=wait)
        _keep_screenshot(opened.page, f"{name}-distributed.png", full=True)
        rows = opened.page.locator(wait).all_text_contents()
        assert len(rows) == 4
        if name == "pp":
            assert [s["bubble_ms"] for s in doc["cluster"]["pipeline"]["stages"]] == [9.5, 7.5, 9.5, 9.5]
            assert "7.50" in rows[1] and "14.50" in rows[1]  # stage 1: bubble 7.5 ms, busy 14.5 ms
            assert "critical path" in (opened.page.locator("#pipeline-0").inner_text())
        else:
            text = opened.page.locator("#all-to-all").inner_text()
            assert "4.00×" in text and "most routed bytes received: 3, 0, 1, 2" in text
        opened.check_clean()


def test_exposed_communication_and_matrix_cards(tmp_path: Path, browser: Any) -> None:
    """The hand-made runs of tests/unit/analysis/test_exposed_comm.py (2 ranks x 2 steps) and
    test_comm_matrix_kineto.py (13 cells, 1 unplaced kernel) in the distributed view: a row per rank
    and step with the JSON's (and the distributed view's) numbers, a row per matrix cell."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.unit.analysis.test_comm_matrix_kineto import three_ranks
    from tests.unit.analysis.test_exposed_comm import two_ranks

    for name, make in (("ex", two_ranks), ("mx", three_ranks)):
        (tmp_path / name).mkdir()
        make(tmp_path / name)
    path = tmp_path / "ex.html"
    doc = _write_trace_report_of(str(tmp_path / "ex" / "run"), path)
    opened = open_page(browser, path, wait="#verdict, #no-findings, #avg-step")
    opened.go("distributed", wait="#exposed-comm-table tbody tr")
    rows = opened.page.locator("#exposed-comm-table tbody tr").all_text_contents()
    assert [r["exposed_ms"] for r in doc["cluster"]["exposed_comm"]["steps"]] == [0.2, 0.2, 0.0, 0.2]
    assert len(rows) == 4 and "0.40" in rows[2] and "100.0" in rows[2]  # rank 1 step 1: all 0.4 ms overlapped
    assert "Most exposed: rank 0" in opened.page.locator("#exposed-comm").inner_text()
    opened.check_clean()
    path = tmp_path / "mx.html"
    _write_trace_report_of(str(tmp_path / "mx" / "run"), path)
    opened = open_page(browser, path, wait="#verdict, #no-findings, #avg-step")
    opened.go("distributed", wait="#comm-matrix-table tbody tr")
    assert opened.page.locator("#comm-matrix-table tbody tr").count() == 13
    sub = opened.page.locator("#comm-matrix").inner_text()
    assert "1 kernels name no peer" in sub and "Peer from group / world" in sub
    _keep_screenshot(opened.page, "matrix-distributed.png", full=True)
    opened.check_clean()


def test_every_rank_of_a_job_opens_on_the_jobs_verdict_and_findings(tmp_path: Path, browser: Any) -> None:
    """tests/data/cpu_jobs/skew: rank 1 is the job's straggler. Rank 0's overview showed only rank
    0's verdict ("bound by communication") and "No findings: nothing stands out" — the job's answer
    was on another page. Every rank now opens on the job's verdict and the job's findings (as the
    terminal prints them), its own verdict beneath; the straggler's gain is of the job's step."""
    skew = Path(__file__).resolve().parents[1] / "data" / "cpu_jobs" / "skew"
    path = tmp_path / "skew.html"
    doc = _write_trace_report(skew, path)
    job, own = doc["verdicts"][0], next(v for v in doc["verdicts"] if v["rank"] == 0)
    assert job["rank"] is None and job["bound"] == "imbalance"
    opened = open_page(browser, path)
    page = opened.page
    opened.go("overview", rank=0, wait="#findings li.finding[data-rule=straggler-rank]")
    assert page.locator("#verdict").text_content() == job["text"]
    assert page.locator("#rank-verdict").text_content() == own["text"]
    # the job's step beside the rank's own window: the job verdict's, the arrivals' one number
    shown = float(page.locator("#job-step").get_attribute("data-value") or "nan")
    assert shown == job["avg_step_ms"] == job["job_step_ms"] == pytest.approx(doc["cluster"]["arrivals"]["job_step_ms"])
    assert float(page.locator("#avg-step").get_attribute("data-value") or "nan") == pytest.approx(own["avg_step_ms"])
    assert "rank 0 average step" in (page.locator("#avg-step").text_content() or "")
    assert page.locator("li.finding").count() == len(doc["findings"])
    gain = page.locator("li.finding[data-rule=straggler-rank] .gain").text_content() or ""
    assert "/ job step" in gain and gain.endswith(", rank 1"), gain
    # "communication" (the critical path's bound) overflowed its Deep-analyses card
    assert page.locator("#deep .stat.textual .v").text_content() == "communication"
    assert page.evaluate("[...document.querySelectorAll('#deep .stat')].every((s) => s.scrollWidth <= s.clientWidth)")
    opened.check_clean()


def test_distributed_view_of_a_cpu_job_shows_its_host_collectives(tmp_path: Path, browser: Any) -> None:
    """tests/data/cpu_jobs/skew: gloo all-reduces on the CPU, no communication kernel. The view said "no
    communication kernels on this rank" and 0.000 ms of compute / comm / wait while the job is bound by
    rank 1's CPU work; "Victims: 0." read as "none". It now shows each rank's step as the Overview splits
    it, leaves the kernel columns out, names the victim's rank and the units, and lists the collectives."""
    skew = Path(__file__).resolve().parents[1] / "data" / "cpu_jobs" / "skew"
    path = tmp_path / "skew.html"
    doc = _write_trace_report(skew, path)
    arr = doc["cluster"]["arrivals"]
    opened = open_page(browser, path)
    page = opened.page
    opened.go("distributed", wait="#rank-host-chart rect.seg")
    text = page.locator("main").inner_text()
    assert "no communication kernels" not in text and "collectives run on the host (gloo on the CPU)" in text
    cpu = {r["rank"]: r["overview"]["breakdown_ms"]["cpu_exec"] for r in doc["ranks"]}
    shown = page.eval_on_selector_all("#rank-host-chart rect.seg[data-cat=cpu_exec]",
                                      "els => els.map(e => [e.dataset.col, parseFloat(e.dataset.value)])")
    assert {int(c): v for c, v in shown} == cpu and cpu[1] > 3 * cpu[0]
    assert page.locator("#rank-host-table tbody tr").count() == 2
    heads = page.locator("#cluster-table th").all_text_contents()
    assert not any(h.startswith(("compute", "comm kernels", "wait in comm")) for h in heads), heads
    assert "of the model's CPU work (its waits in collectives aside)" in page.locator("#cluster p.sub").inner_text()
    assert "the model's CPU work" in heads, heads  # the ranks compared on it, as their verdicts name it
    sub = page.locator("#arrivals p.sub").inner_text()
    assert arr["victims"] == [0] and "): rank 0." in sub and "Victims: 0." not in sub, sub
    assert "ms per average step" in sub and "last at 8 of 8 collectives" in sub, sub
    assert page.locator("#arrival-collectives-table tbody tr").count() == len(arr["collectives"])
    first = page.locator("#arrival-collectives-table tbody tr").first.locator("td").all_text_contents()
    latest = max(arr["collectives"], key=lambda c: c["lateness_ms"])
    assert first[:2] == [str(latest["index"]), latest["type"]] and first[5] == _ms(latest["lateness_ms"])
    _keep_screenshot(page, "skew-distributed.png", full=True)
    opened.check_clean()


ASCEND_DB = NW0.parents[1] / "ascend_msinsight" / "small_cnn_2rank_hccl_level1" / "db"
#: what an NPU's views never read (its AI cores' Cube runs every matrix op; it has no SMs, no CUDA)
NVIDIA_WORDS = re.compile(r"\bGPUs?\b|CUDA|Tensor[- ]Cores?|\bSMs?\b|\bTC\b|cuDNN")


def test_an_npu_report_is_in_the_npus_words(tmp_path: Path, browser: Any) -> None:
    """The Ascend job's report: its overview, kernels and operators views say "NPU" where a GPU's say
    "GPU" (the views' texts said once, ``views.sayView``), and carry no Tensor-Core, blocks-per-SM or
    occupancy figures; the H100 base run's keep theirs."""
    if not ASCEND_DB.is_dir():
        pytest.skip(f"the Ascend db export is not at {ASCEND_DB}")
    path = tmp_path / "ascend.html"
    _write_trace_report(ASCEND_DB, path)
    opened = open_page(browser, path)
    page = opened.page
    said = []
    for view, wait in (("overview", "#verdict"), ("kernels", "#kernels-table tbody tr"),
                       ("operators", "#operators-table tbody tr"), ("steps", "main#view section.card")):
        opened.go(view, wait=wait)
        said.append(page.locator("main").inner_text())
    assert not NVIDIA_WORDS.findall(" ".join(said)), sorted(set(NVIDIA_WORDS.findall(" ".join(said))))
    assert "NPU utilization" in said[0] and "NPU idle / step" in said[0] and "of NPU time in all" in said[1]
    opened.check_clean()
    gpu = tmp_path / "h100.html"
    _write_trace_report(H100_BASE, gpu)
    opened = open_page(browser, gpu)
    opened.go("kernels", wait="#kernels-table tbody tr")
    assert {"blocks/SM", "TC"} <= set(opened.page.locator("#kernels-table th").all_text_contents())
