"""The Markdown summary: short, escaped, the right numbers, diff with its gate."""

from __future__ import annotations

import re

from report_docs import EVIL, analysis_doc, diff_doc

from stepscope.report.markdown import md, render_markdown


def test_analysis_summary_has_verdict_findings_breakdown_and_kernels() -> None:
    text = render_markdown(analysis_doc(), title="resnet50")
    assert text.startswith("### resnet50\n")
    assert "**Verdict:** Dataloader bound" in text
    assert "| 1 | high | Dataloader bound | 52.1 ms (29.3 %) |" in text
    assert "| **avg** | **177.6 ms** |" in text
    assert "| 5 | 187.9 ms | 98.6 ms |" in text
    assert "volta\\_scudnn\\_128x64\\_relu\\_interior\\_nn\\_v1" in text
    assert len(text.splitlines()) < 50 and len(text) < 6000  # short enough for a PR comment
    assert "1. Set num\\_workers &gt; 0" in text  # the advice of the top findings


def test_names_cannot_inject_html_or_break_tables() -> None:
    assert md(EVIL) == "&lt;script&gt;alert(\"x\")&lt;/script&gt;"
    assert md("a|b*c*_d_") == "a\\|b\\*c\\*\\_d\\_"
    assert md("x" * 200, 20).endswith("…") and len(md("x" * 200, 20)) == 20
    text = render_markdown(analysis_doc())
    assert "<script>" not in text
    blocks: list[list[int]] = [[]]
    for line in text.splitlines():
        if line.startswith("|"):
            blocks[-1].append(len(re.findall(r"(?<!\\)\|", line)))  # unescaped pipes = columns
        elif blocks[-1]:
            blocks.append([])
    assert all(len(set(b)) == 1 for b in blocks if b)


def test_no_findings_and_multi_rank() -> None:
    text = render_markdown(analysis_doc(findings=False, ranks=2))
    assert "No findings." in text
    assert "| 1 (culprit) |" in text
    assert ("**Ranks** — load imbalance of compute time (kernels) across ranks 12.5 % (the busiest rank over the "
            "mean)") in text
    assert ("- culprit rank 1: its own GPU compute; last at 2 of 2 collectives, 2.5 ms per step after the next "
            "rank") in text and "- victims (wait for the culprits): ranks 0" in text
    assert "- slow link group 2 (ranks 2, 3) (allreduce): 2.10 GB/s, median of its kind and size 8.39 GB/s" in text


def test_diff_summary_with_gate_and_biggest_changes() -> None:
    text = render_markdown(diff_doc(gate_passed=False))
    assert "**Gate: ❌ FAILED** — new is +25.9 % vs base (limit 5.0 %)" in text
    assert "Average step 177.6 ms → 141.1 ms (−36.50 ms)." in text
    assert "| DataLoader | 59.3 ms | 1.2 ms | −58.10 ms |" in text
    kernel_rows = [ln for ln in text.splitlines() if "&lt;script&gt;" in ln]
    assert kernel_rows and kernel_rows[0].endswith("| +2.00 ms |")
    assert text.index("op\\_0 ") < text.index("op\\_99 ")
    passed = render_markdown(diff_doc(gate_passed=True))
    assert "✅ passed" in passed
    assert "Gate" not in render_markdown(diff_doc(gate_passed=None))


def test_the_findings_say_what_their_gain_is_a_share_of() -> None:
    """As the terminal's column: the step; the window of a trace without step markers; the job's
    step when the findings are grouped across ranks."""
    assert "estimated gain per step)" in render_markdown(analysis_doc())
    whole = analysis_doc()
    for f in whole["findings"]:
        f["whole_trace"] = True
    text = render_markdown(whole)
    assert "estimated gain over the window — the whole trace, no step markers)" in text
    assert "| est. gain (% window) |" in text and "per step" not in text.split("**What to change**")[0]
    job = analysis_doc(ranks=2)
    job["findings"][0]["ranks"] = [0, 1]
    text = render_markdown(job)
    assert "estimated gain per job step)" in text and "| est. gain (% job step) |" in text
