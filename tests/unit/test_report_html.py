"""The HTML renderer on hand-made §12 documents: escaping, chart numbers, empty sections, size caps."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from report_docs import EVIL, KERNEL_TPL, analysis_doc, diff_doc, steps

from stepscope.report.html import render_diff_html, render_html
from stepscope.report.html.fmt import BREAKDOWN_KEYS
from stepscope.report.html.svg import nice_range, nice_ticks


class _Collector(HTMLParser):
    """Collects tags with attributes, script bodies and text, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.text: list[str] = []
        self._in_script: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "script":
            self._in_script = a
            self.scripts.append((a, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            a, body = self.scripts[-1]
            self.scripts[-1] = (a, body + data)
        else:
            self.text.append(data)


def parse(page: str) -> _Collector:
    c = _Collector()
    c.feed(page)
    return c


def test_hostile_names_are_escaped_everywhere() -> None:
    page = render_html(analysis_doc(), title=f"title {EVIL}")
    assert EVIL not in page  # never raw: in text, attributes and the embedded JSON alike
    p = parse(page)
    # exactly the two scripts we wrote: the inert JSON and our own code
    assert [a.get("type") for a, _ in p.scripts] == ["application/json", None]
    assert "alert" not in p.scripts[1][1]
    assert EVIL in "".join(p.text)  # shown to the reader as text
    assert any(a.get("data-name") == EVIL for _, a in p.tags)  # attribute round-trips exactly
    assert not any(t in ("b", "iframe", "img", "link") for t, _ in p.tags)


def test_embedded_json_round_trips_and_cannot_close_the_script() -> None:
    doc = analysis_doc()
    page = render_html(doc, title="t")
    raw = re.search(r'<script type="application/json" id="stepscope-data">(.*?)</script>', page, re.S)
    assert raw is not None and "<" not in raw.group(1)
    data = json.loads(raw.group(1))
    assert data["ranks"][0]["kernels"][2]["name"] == EVIL
    assert len(data["ranks"][0]["kernels"]) == 20  # a sample: --json has the full document
    assert "curves" not in data["ranks"][0]["memory"]


def _segments(page: str, chart_id: str) -> list[dict[str, str]]:
    p = parse(page)
    inside, out = False, []
    for tag, a in p.tags:
        if tag == "svg":
            inside = a.get("id") == chart_id
        elif inside and tag == "rect" and "seg" in a.get("class", ""):
            out.append(a)
    return out


def test_step_chart_holds_every_step_and_category() -> None:
    page = render_html(analysis_doc(), title="t")
    segs = _segments(page, "step-chart-r0")
    got = {(a["data-col"], a["data-cat"]): float(a["data-value"]) for a in segs}
    for s in steps():
        for key in BREAKDOWN_KEYS:
            v = s["breakdown_ms"][key]
            if v > 0:
                assert got[(s["step"], key)] == pytest.approx(v, rel=1e-9)
            else:
                assert (s["step"], key) not in got
    assert got[("5", "dataloader")] == pytest.approx(69.317)


def test_kernel_chart_shares_and_table_cap() -> None:
    page = render_html(analysis_doc(), title="t")
    segs = _segments(page, "kernel-chart-r0")
    assert len(segs) == 10
    total = 103.5 + 61.2 + 1.25 + sum(10.0 / (i + 1) for i in range(80))
    assert float(segs[0]["data-value"]) == pytest.approx(100 * 103.5 / total)
    assert segs[1]["data-name"] == KERNEL_TPL
    assert "Showing the top 50 of 83 rows" in page
    table = page[page.index('id="kernels-r0"'):]
    assert table[: table.index("</table>")].count("<tr>") == 51  # header + 50


def test_memory_curve_is_downsampled() -> None:
    page = render_html(analysis_doc(), title="t")
    m = re.search(r'<polyline[^>]*data-series="allocated"[^>]*>', page)
    assert m is not None
    npoints = int(re.search(r'data-points="(\d+)"', m.group(0)).group(1))  # type: ignore[union-attr]
    assert 2 <= npoints <= 2000
    assert float(re.search(r'data-peak="([\d.]+)"', m.group(0)).group(1)) == 999.0  # type: ignore[union-attr]


def test_findings_ranked_with_evidence_and_empty_findings() -> None:
    page = render_html(analysis_doc(), title="t")
    assert page.index('data-rule="dataloader-bound"') < page.index('data-rule="no-tensor-cores"')
    assert "dataloader_ms_per_step" in page and "save ≈ 52.1 ms / step (29.3 %)" in page
    empty = render_html(analysis_doc(findings=False), title="t")
    assert 'id="no-findings">no findings<' in empty


def test_empty_document_renders_every_section_plainly() -> None:
    doc: dict[str, Any] = {"schema_version": "1", "ranks": [{"rank": 0, "device": None, "overview": None,
                                                             "steps": [], "gpu": None, "kernels": [],
                                                             "operators": [], "distributed": None,
                                                             "idle": None}],
                           "cluster": None, "findings": [], "diagnostics": []}
    page = render_html(doc, title="empty")
    assert "no findings" in page and "No step breakdown" in page and "No kernels" in page
    assert "no repairs, nothing dropped" in page
    assert "<svg" not in page.split("<main>")[1]  # nothing to chart
    assert render_html({}, title="nothing").count("<section") >= 2


def test_distributed_section_marks_the_culprit_its_causes_and_slow_links() -> None:
    page = render_html(analysis_doc(ranks=4), title="t")
    segs = _segments(page, "rank-chart")
    comp = {a["data-col"]: float(a["data-value"]) for a in segs if a["data-cat"] == "computation"}
    assert comp == {"rank 0": 120.0, "rank 1 (culprit)": 121.0, "rank 2": 122.0, "rank 3": 123.0}
    assert "culprits: 1 ·" in page  # from cluster.arrivals, not the old slow_ranks
    assert ("rank 1 arrives last at 2 of 2 collectives, 2.50 ms per step after the next rank (12.5 % of the step): "
            "its own GPU compute 2.40 ms, its host (CPU ops, launches) 0.10 ms") in page
    assert 'id="arrivals-table"' in page and 'id="slow-links"' in page and "group 2 (ranks 2, 3)" in page
    assert 'class="tabs"' in page and page.count('class="rank-page"') == 4
    assert "load imbalance 12.5 %" in page


def test_page_is_self_contained() -> None:
    page = render_html(analysis_doc(), title="t") + render_diff_html(diff_doc(), title="d")
    assert "default-src 'none'" in page
    for needle in ("http://", "https://", "src=", "@import", "url("):
        # the only URL allowed is the SVG namespace, which is an identifier, not a fetch
        assert needle not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_diff_report_sorted_by_absolute_change_with_gate() -> None:
    page = render_diff_html(diff_doc(gate_passed=False), title="nw4 → nw0")
    assert 'id="gate" data-passed="false"' in page and "gate FAILED" in page
    rows = re.findall(r'<td class="txt" title="(op_\d+)"', page)
    assert rows[:4] == ["op_0", "op_1", "op_99", "op_2"]
    assert len(rows) == 50
    assert "DataLoader −58.10 ms/step" in page
    assert EVIL not in page
    base = _segments(page, "overall-chart")
    assert {(a["data-name"], a["data-side"]): float(a["data-value"]) for a in base}[("DataLoader", "new")] == 1.2
    assert 'id="gate"' not in render_diff_html(diff_doc(gate_passed=None), title="x")


def test_nice_ticks() -> None:
    assert nice_ticks(187.9) == [0, 50, 100, 150, 200]
    assert nice_ticks(0) == [0.0, 1.0]
    assert nice_range(0.078, 1000.08, 5) == [250, 500, 750, 1000]
