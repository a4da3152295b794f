"""Notebook displays and frames: the Trace, stepscope.analyze(...) and stepscope.diff(...) render HTML
from the documents their commands print, and convert tables to Arrow / pandas / polars."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

import stepscope
from stepscope.cli import cli
from stepscope.errors import UsageError
from stepscope.model.display import cell
from stepscope.model.schema import STRING_ID_COLUMNS
from tests.builders import TraceBuilder

DATA = Path(__file__).resolve().parents[1] / "data" / "h100_cuda_train"
BASE, FIXED = DATA / "base", DATA / "fixed"


def cli_json(*args: str) -> dict[str, Any]:
    res = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.output)
    return out


@pytest.fixture(scope="module")
def analysis() -> stepscope.notebook.Analysis:
    return stepscope.analyze(BASE)


def test_trace_html_shows_its_ranks_and_event_kinds() -> None:
    trace = stepscope.load(BASE)
    doc = cli_json("analyze", str(BASE))
    page = trace._repr_html_()
    assert html.escape(trace.source) in page and f"{len(trace.events):,} events" in page
    assert doc["ranks"][0]["device"]["name"] in page
    for kind, n in doc["ranks"][0]["event_counts"].items():
        assert f"<td>{kind}</td><td>{n:,}</td>" in page


def test_html_escapes_and_cuts_text() -> None:
    assert cell("<script>x</script>") == "&lt;script&gt;x&lt;/script&gt;"
    assert len(cell("k" * 10_000)) == 160 and cell(1234567) == "1,234,567" and cell(0.5) == "0.5"


def test_a_hostile_name_is_escaped_in_every_display(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, 0, 1000)
    b.op("<img src=x onerror=alert(1)>", 10, 900)
    trace = b.load(tmp_path)
    a = stepscope.analyze(trace)
    assert [o["name"] for o in a.view("operators")] == ["<img src=x onerror=alert(1)>"]
    for page in (trace._repr_html_(), a._repr_html_()):
        assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in a._repr_html_()


def test_to_arrow_decodes_string_ids_as_dictionaries() -> None:
    trace = stepscope.load(BASE)
    at = trace.to_arrow()
    ids = np.asarray(trace.events["name"])
    assert at.schema.field("name").type == pa.dictionary(pa.int32(), pa.string())
    assert at.column("name").to_pylist() == [None if i < 0 else trace.strings[int(i)] for i in ids]
    cat = np.asarray(trace.events["cat"])
    assert at.column("cat").null_count == int((cat < 0).sum())
    assert at.column("dur_ns").to_numpy().tolist() == np.asarray(trace.events["dur_ns"]).tolist()
    raw = trace.to_arrow(decode=False)
    assert raw.column("name").to_numpy().tolist() == ids.tolist()
    for table, names in STRING_ID_COLUMNS.items():
        t = trace.to_arrow(table)
        assert t.num_rows == len(getattr(trace, table))
        assert all(pa.types.is_dictionary(t.schema.field(n).type) for n in names)
    with pytest.raises(ValueError, match="unknown table 'nope'"):
        trace.to_arrow("nope")


def test_to_pandas_and_polars_agree_with_the_model() -> None:
    pytest.importorskip("pandas", reason="pandas is not installed (pip install 'stepscope[pandas]')")
    pl = pytest.importorskip("polars", reason="polars is not installed (pip install 'stepscope[polars]')")
    trace = stepscope.load(BASE)
    df = trace.to_pandas()
    kernels = df[df["kind"] == 6]
    by_name = kernels.groupby("name", observed=True)["dur_ns"].sum().sort_values(ascending=False)
    top = stepscope.analyze(trace).view("kernels")[0]
    assert by_name.index[0] == top["name"] and by_name.iloc[0] / 1e6 == pytest.approx(top["total_ms"], rel=1e-12)
    assert str(df["name"].dtype) == "category" and len(df) == len(trace.events)
    pdf = trace.to_polars("tracks")
    assert isinstance(pdf, pl.DataFrame) and pdf["name"].to_list() == trace.to_arrow("tracks")["name"].to_pylist()


def test_analysis_html_is_the_document(analysis: Any) -> None:
    doc = cli_json("analyze", str(BASE))
    page = analysis._repr_html_()
    ov = doc["ranks"][0]["overview"]
    assert f"<td>{cell(ov['avg_step_ms'])}</td>" in page and f"<td>{ov['step_count']}</td>" in page
    assert html.escape(doc["verdicts"][0]["text"]) in page
    for f in doc["findings"]:
        assert html.escape(f["title"]) in page and f"<td>{cell(f['est_gain_ms'])}</td>" in page
    assert cell(doc["ranks"][0]["kernels"][0]["name"]) in page  # cut to 160 characters


def test_findings_and_views_convert(analysis: Any) -> None:
    doc = cli_json("analyze", str(BASE))
    found = analysis.findings
    assert len(found) == len(doc["findings"]) and found[0]["rule"] == doc["findings"][0]["rule"]
    at = found.to_arrow()
    assert at.column("rule").to_pylist() == [f["rule"] for f in doc["findings"]]
    assert at.column("change").to_pylist() == [f["change"]["key"] for f in doc["findings"]]
    k = analysis.to_arrow("kernels")
    assert k.column("name").to_pylist() == [r["name"] for r in doc["ranks"][0]["kernels"]]
    assert k.column("total_ms").to_pylist() == pytest.approx([r["total_ms"] for r in doc["ranks"][0]["kernels"]])
    with pytest.raises(UsageError, match="not a table"):
        analysis.to_arrow("overview")
    with pytest.raises(UsageError, match="unknown view 'nope'"):
        analysis.view("nope")
    with pytest.raises(UsageError, match="rank 3 is not in the trace"):
        analysis.view("kernels", rank=3)


def test_diff_html_and_frames_are_the_diff_document(analysis: Any) -> None:
    want = cli_json("diff", str(BASE), str(FIXED))
    d = stepscope.diff(analysis, FIXED)
    page = d._repr_html_()
    step = next(r for r in want["overall"] if r["category"] == "step")
    assert f"<td>step</td><td>{cell(step['base_ms'])}</td><td>{cell(step['new_ms'])}</td>" in page
    for line in want["narrative"]:
        assert html.escape(line) in page
    for f in want["findings"]:
        assert html.escape(f["title"]) in page
    overall = d.to_arrow()
    assert overall.column("category").to_pylist() == [r["category"] for r in want["overall"]]
    assert overall.column("diff_ms").to_pylist() == pytest.approx([r["diff_ms"] for r in want["overall"]])
    with pytest.raises(UsageError, match="no diff table 'nope'"):
        d.table("nope")
