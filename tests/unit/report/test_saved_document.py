"""``stepscope report`` of a saved ``--json`` document of the wrong shape (issue 21:
``ranks[0].rank: "x"`` raised ValueError): one line naming the file, exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.ingest.helpers import assert_one_line_error
from tests.unit.ingest.test_bad_input import run_main
from tests.unit.report_docs import analysis_doc, diff_doc


def _bad_rank(doc: dict[str, Any]) -> None:
    doc["ranks"][0]["rank"] = "x"


def _bad_steps(doc: dict[str, Any]) -> None:
    doc["ranks"][0]["steps"] = [{"step": "one", "dur_ms": "slow"}]


def _bad_overall(doc: dict[str, Any]) -> None:
    doc["overall"] = {"base": 5, "new": [1]}


@pytest.mark.parametrize(("make", "spoil"), [(analysis_doc, _bad_rank), (analysis_doc, _bad_steps),
                                             (diff_doc, _bad_overall)])
@pytest.mark.parametrize("out", [["-o", "page.html"], ["--md"]])
def test_a_document_of_the_wrong_shape_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         make: Any, spoil: Any, out: list[str]) -> None:
    doc = make()
    spoil(doc)
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(doc))
    res = run_main(["report", str(path), *[str(tmp_path / o) if o.endswith(".html") else o for o in out]], capsys)
    if res.returncode == 0:  # rendered anyway: fine, as long as nothing crashed
        return
    assert_one_line_error(res, path)
    assert "not a valid stepscope JSON document" in res.stderr


def test_the_rank_of_the_wrong_type_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = analysis_doc()
    _bad_rank(doc)
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(doc))
    assert_one_line_error(run_main(["report", str(path), "-o", str(tmp_path / "p.html")], capsys), path)


@pytest.mark.parametrize("out", [["-o", "page.html"], ["--md", "-o", "page.md"]])
def test_a_lone_surrogate_in_a_saved_document_is_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          out: list[str]) -> None:
    """Fuzzing (issue 21): ``"\\ud800"`` (valid JSON, not valid UTF-8) in a saved document's source
    raised UnicodeEncodeError when the page was written. It is written, with ``?`` in its place."""
    doc = analysis_doc()
    doc["source"] = "run\ud800.json"
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(doc))  # ensure_ascii: the file holds the escape, as the fuzzer wrote it
    res = run_main(["report", str(path), *[str(tmp_path / o) if "." in o else o for o in out]], capsys)
    assert res.returncode == 0, res.stderr
    page = (tmp_path / out[-1]).read_text(encoding="utf-8")
    assert "run?.json" in page
