"""The findings table stays readable at 80 columns: whole titles, no ellipsis, the rule id in the details."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from stepscope import load
from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.report import findings_view, texts

BASE = Path(__file__).resolve().parents[2] / "data" / "h100_cuda_train" / "base"


def _table_text(width: int) -> tuple[str, list[str]]:
    advice = run_advisor(analyze(load(BASE)))
    console = Console(record=True, width=width)
    findings_view.render_findings(advice.findings, console, top=10)
    out = console.export_text()
    return out.split("\n1. ")[0], [texts.title_text(f) for f in advice.findings]


def test_eighty_columns_keep_every_title_whole() -> None:
    table, titles = _table_text(80)
    assert "…" not in table and "rule" not in table.splitlines()[2]
    assert max(len(line) for line in table.splitlines()) <= 80
    flat = " ".join(" ".join(line.strip("│┃ ").split()) for line in table.splitlines())
    for title in titles:
        assert all(word in flat for word in title.split())
    assert "dataloader-bound" not in table  # the details below name the rule


def test_wide_terminals_show_the_rule_id() -> None:
    table, _ = _table_text(160)
    assert "dataloader-bound" in table and "rank" not in table.splitlines()[2]  # one rank: no rank column


def test_a_trace_without_steps_gets_shares_of_the_window(tmp_path: Path) -> None:
    """No ProfilerStep: the gains are shares of the whole trace, and the column says so."""
    from tests.builders import TraceBuilder

    b = TraceBuilder()
    for j in range(40):  # 40 short kernels, each waiting for its slow launch: launch-bound
        b.launch_kernel("vectorized_elementwise_kernel", launch_ts=10 + j * 150, launch_dur=10, ts=100 + j * 150,
                        dur=4)
    advice = run_advisor(analyze(b.load(tmp_path)))
    assert advice.findings and all(f.whole_trace for f in advice.findings)
    console = Console(record=True, width=120)
    findings_view.render_findings(advice.findings, console)
    header = console.export_text().splitlines()[2]
    assert "% window" in header and "% step" not in header
    table, _ = _table_text(160)
    assert "% step" in table.splitlines()[2]


def test_a_multi_rank_run_gets_shares_of_the_job_step(tmp_path: Path) -> None:
    """Four ranks: every finding is grouped across the ranks (or is a cluster rule's), its gain a share
    of the job's step (advisor.ranking), not of the rank's whose number stands beside it."""
    from tests.builders import load_ranks
    from tests.unit.advisor.scenes import rank_builder

    advice = run_advisor(analyze(load_ranks([rank_builder(r, 6_000 if r == 3 else 2_000) for r in range(4)],
                                            tmp_path)))
    assert advice.findings and all(f.ranks or f.rule in texts.CLUSTER_RULES for f in advice.findings)
    console = Console(record=True, width=160)
    findings_view.render_findings(advice.findings, console)
    header = console.export_text().splitlines()[2]
    assert "% job step" in header and "rank" in header
