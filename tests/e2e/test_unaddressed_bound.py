"""When no finding shortens what bounds the step, the verdict says so — in every output — and only then."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from stepscope import load
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report import findings_view, json_out
from stepscope.report.advice_json import finding_dict
from stepscope.report.markdown import render_markdown

SENTENCE = "No finding below shortens"


@pytest.mark.parametrize("rel, said", [
    ("nsys_pipit/cloverleaf_cuda_a100", True),  # compute-bound; its findings: sync-in-step, pageable-memcpy
    ("kineto_tb_plugin/resnet50_num_workers_0", False),  # input-bound; dataloader-bound addresses it
    ("tracelens/h100_bert_small_inference", False),  # host-bound; launch-bound addresses it
])
def test_the_verdict_says_when_no_finding_addresses_its_bound(shared_traces: Path, rel: str, said: bool) -> None:
    bundle = analyze(load(shared_traces / rel))
    advice = run_advisor(bundle)
    assert advice.findings
    assert any(f.addresses_bound for f in advice.findings) is not said
    doc = json_out.to_json(bundle, [finding_dict(f) for f in advice.findings])
    assert (SENTENCE in doc["verdicts"][0]["text"]) is said
    assert all(SENTENCE not in v["text"] for v in doc["verdicts"][1:])
    console = Console(record=True, width=2000)
    findings_view.render_verdicts(advice.verdicts, console, advice.findings)
    assert (SENTENCE in console.export_text()) is said
    assert (SENTENCE in render_markdown(doc)) is said
