"""The HTML report of a program without a device, in a real headless Chromium: every view it offers reads in
the program's words (tests/e2e/test_cpu_only_wording.py's check on the page's text), it offers no view of a
device's work (Kernels, Graphs, Roofline), its what-if form no change to a device's work alone, its ranks table
no kernel columns and its critical path the verdict's "the model's CPU work". Set ``STEPSCOPE_SCREENSHOT_DIR``
to keep a screenshot of each view.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import launch, record
from test_cpu_only_wording import ALL, JOBS, bad_words, path_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: the runs whose report is opened: the jobs (ranks table, arrivals, the job's replays), the GEMM-bound step,
#: torch.compile on the CPU, the loop's own code and the shared gloo rank
SHOWN = [*JOBS, "cpu_cases/matmul_chain", "cpu_cases/compile_steady", "cpu_cases/ckpt_every_step",
         *(r for r in ALL if r.startswith("/"))]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


def _report(run: str, out: Path) -> None:
    from stepscope.cli.report_cmd import _from_trace
    from stepscope.server.standalone import write_text

    _, page = _from_trace(str(path_of(run)), None, None, True, None, ())
    write_text(out, page)


def _views(page: Any) -> list[str]:
    return [str(v) for v in page.eval_on_selector_all("nav a[data-view]", "els => els.map(e => e.dataset.view)")]


def _shot(page: Any, name: str) -> None:
    target = os.environ.get("STEPSCOPE_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=True)


@pytest.mark.parametrize("run", SHOWN)
def test_every_view_of_a_cpu_programs_report_is_in_its_words(run: str, browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    _report(run, path)
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    errors: list[str] = []
    record(page, errors, [])
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_selector("main#view section.card", timeout=30_000)
    views = _views(page)
    assert {"overview", "steps", "operators", "whatif"} <= set(views)
    assert not {"kernels", "graphs", "roofline"} & set(views), views
    ranks = page.eval_on_selector_all("#rank-picker option", "els => els.map(e => e.value)") or [None]
    bad = []
    for rank in ranks[:2]:  # the first two ranks of a job (their views differ by their numbers only)
        for view in views:
            query = "" if rank is None else f"?rank={rank}"
            page.evaluate(f"location.hash = '#/run/report/{view}{query}'")
            page.wait_for_selector(f"nav a.on[data-view='{view}']", timeout=30_000)
            page.wait_for_selector("main#view section.card", timeout=30_000)
            page.wait_for_timeout(150)
            text = page.inner_text("main#view")
            bad += [f"{view} (rank {rank}): {line}" for line in bad_words(text)]
            if view == "overview" and "critical path bound by" in text:
                assert "host\n" not in text.split("critical path bound by", 1)[1][:40]
            if view == "distributed" and run in JOBS:
                assert "comm kernels" not in text and "the model's CPU work" in text
            _shot(page, f"cpu-{Path(run).name}-{view}-{rank}.png")
    assert errors == []
    assert not bad, bad
