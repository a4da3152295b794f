"""The report's What-if section, drawn from the §12 ``remedies`` key; findings with a replayed gain link to it."""

from __future__ import annotations

import re

import pytest

from stepscope.report.html import render_html
from stepscope.report.html.whatif import cli_options
from tests.unit.report_docs import EVIL, REMEDIES, analysis_doc, whatif_doc


def _rows(page: str, rank: int) -> dict[str, tuple[float, float]]:
    found = re.findall(rf'<tr id="whatif-r{rank}-([a-z-]+)" class="remedy" data-remedy="[a-z-]+" '
                       r'data-predicted-ms="([0-9.]+)" data-saved-ms="([0-9.]+)">', page)
    return {name: (float(p), float(s)) for name, p, s in found}


def test_section_holds_every_remedy_of_every_rank() -> None:
    doc = whatif_doc(ranks=2)
    page = render_html(doc, title="t")
    for r in doc["ranks"]:
        rows = _rows(page, r["rank"])
        want = {x["remedy"]: (x["predicted_mean_ms"], x["saved_ms"]) for x in r["remedies"]["remedies"]}
        assert rows.keys() == want.keys()
        assert all(rows[k] == pytest.approx(v, abs=1e-6) for k, v in want.items())
        assert f'id="whatif-chart-r{r["rank"]}"' in page
        assert f'id="whatif-measured-r{r["rank"]}" data-value="{r["remedies"]["measured_mean_ms"]}"' in page
    assert page.count('data-side="new"') == 2 * len(REMEDIES)  # one predicted bar per remedy and rank
    assert EVIL not in page and "stepscope whatif RUN --workers 4" in page
    assert '<a href="#whatif-r0">What-if</a>' in page


def test_replayed_finding_links_to_its_remedy_on_its_rank() -> None:
    page = render_html(whatif_doc(ranks=2), title="t")
    links = re.findall(r'<a class="whatif-link" href="#([^"]+)" data-goto-rank="(\d+)">', page)
    assert links == [("whatif-r1-loader-workers", "1")]  # only the finding whose evidence names a remedy
    assert 'id="whatif-r1-loader-workers"' in page


def test_no_remedies_is_a_plain_note() -> None:
    doc = analysis_doc()
    page = render_html(doc, title="t")
    assert 'id="whatif-r0"' in page and "No what-if replay for this rank" in page
    assert "class=\"whatif-link\"" not in page


def test_cli_options() -> None:
    assert cli_options({"workers": 4, "pin_copies": True, "host_overhead": 0.0}) == \
        "--workers 4 --pin-copies --host-overhead 0"
    assert cli_options({"drop_syncs": ".", "overlap_comm": False}) == "--drop-syncs ."
    assert cli_options(None) == ""
