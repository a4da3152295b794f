"""The engine: ranking, severities, "not run" once, a broken rule contained; config; texts; CLI; JSON."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from stepscope.advisor.config import AdvisorConfig, load_config
from stepscope.advisor.context import RuleContext
from stepscope.advisor.engine import advise, run_advisor
from stepscope.advisor.finding import Change, Finding, Severity, severity_for
from stepscope.advisor.rules import ALL_RULES
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import analyze
from stepscope.cli import cli
from stepscope.errors import StepscopeError
from stepscope.report import json_out, texts
from stepscope.report.advice_json import finding_dict
from tests.builders import TraceBuilder
from tests.unit.advisor.scenes import dataloader, tensor_cores

DOCS = Path(__file__).resolve().parents[3] / "docs" / "rules"


def _trace(tmp_path: Path) -> object:
    b = TraceBuilder()
    dataloader(b, True)  # 4 ms DataLoader per 10 ms step, plus a 5.75 ms FP32 sgemm
    return b.load(tmp_path)


def test_severity_thresholds() -> None:
    assert severity_for(5.0, 100.0, 5.0, 2.0) is Severity.HIGH
    assert severity_for(4.99, 100.0, 5.0, 2.0) is Severity.MEDIUM
    assert severity_for(2.0, 100.0, 5.0, 2.0) is Severity.MEDIUM
    assert severity_for(1.99, 100.0, 5.0, 2.0) is Severity.LOW
    assert severity_for(1.0, 0.0, 5.0, 2.0) is Severity.LOW


def test_default_severity_is_high_only_for_a_tenth_of_the_step() -> None:
    """A gain of 5 % of the step is medium, not high (issue 14: DLRM dataloader-bound was high at 5.3 %)."""
    from stepscope.advisor.config import AdvisorConfig

    cfg = AdvisorConfig()
    assert severity_for(5.3, 100.0, cfg.severity_high_pct, cfg.severity_medium_pct) is Severity.MEDIUM
    assert severity_for(9.99, 100.0, cfg.severity_high_pct, cfg.severity_medium_pct) is Severity.MEDIUM
    assert severity_for(10.0, 100.0, cfg.severity_high_pct, cfg.severity_medium_pct) is Severity.HIGH


def test_ranked_by_gain_and_json_shape(tmp_path: Path) -> None:
    bundle = analyze(_trace(tmp_path))  # type: ignore[arg-type]
    found = advise(bundle, AdvisorConfig(amp_speedup=2.0))  # the V100's peak ratio (8) puts the FP32 GEMM first
    gains = [f.est_gain_ns for f in found]
    assert gains == sorted(gains, reverse=True)
    assert found[0].rule == "dataloader-bound" and found[0].severity is Severity.HIGH
    d = finding_dict(found[0])
    assert set(d) >= {"rule", "severity", "rank", "est_gain_ms", "est_gain_pct", "evidence", "advice"}
    assert d["est_gain_pct"] == pytest.approx(40.0, abs=0.5)
    assert "num_workers=4" in d["advice"]
    json.dumps(json_out.clean(d))


def test_not_run_reported_once_and_broken_rule_contained(tmp_path: Path) -> None:
    bundle = analyze(_trace(tmp_path))  # type: ignore[arg-type]

    def missing(ctx: RuleContext) -> list[Finding]:
        raise NotApplicable("needs X")

    def broken(ctx: RuleContext) -> list[Finding]:
        raise ZeroDivisionError("boom")

    rules = [SimpleNamespace(RULE_ID="needs-x", SCOPE="rank", detect=missing),
             SimpleNamespace(RULE_ID="needs-x", SCOPE="rank", detect=missing),
             SimpleNamespace(RULE_ID="broken", SCOPE="rank", detect=broken), *ALL_RULES]
    advice = run_advisor(bundle, rules=rules)  # type: ignore[arg-type]
    needs = [n for n in advice.not_run if n.rule == "needs-x"]
    assert len(needs) == 1 and needs[0].reason == "needs X" and needs[0].ranks == (0,)
    assert any(n.rule == "broken" and "ZeroDivisionError" in n.reason for n in advice.not_run)
    assert any(f.rule == "dataloader-bound" for f in advice.findings)


def test_config_overrides(tmp_path: Path) -> None:
    toml = tmp_path / "adv.toml"
    toml.write_text("[advisor]\ndataloader_min_pct = 50.0\namp_speedup = 3\n")
    cfg = load_config(toml, ["severity_high_pct=10", "dataloader_default_workers=8"])
    assert (cfg.dataloader_min_pct, cfg.amp_speedup, cfg.severity_high_pct) == (50.0, 3.0, 10.0)
    assert cfg.dataloader_default_workers == 8 and isinstance(cfg.dataloader_default_workers, int)
    with pytest.raises(StepscopeError, match="unknown advisor setting"):
        load_config(None, ["no_such_key=1"])
    with pytest.raises(StepscopeError, match="not a float"):
        load_config(None, ["amp_speedup=fast"])
    with pytest.raises(StepscopeError, match="key=value"):
        load_config(None, ["amp_speedup"])
    bad = tmp_path / "bad.toml"
    bad.write_text("[advisor\n")
    with pytest.raises(StepscopeError, match="not valid TOML"):
        load_config(bad)


def test_threshold_changes_the_outcome(tmp_path: Path) -> None:
    bundle = analyze(_trace(tmp_path))  # type: ignore[arg-type]
    assert "dataloader-bound" not in {f.rule for f in advise(bundle, AdvisorConfig(dataloader_min_pct=50.0))}


def test_every_rule_has_texts_and_docs() -> None:
    for rule in ALL_RULES:
        assert rule.RULE_ID in texts.RULES, rule.RULE_ID
        assert (DOCS / f"{rule.RULE_ID}.md").is_file(), rule.RULE_ID
        assert rule.SCOPE in ("rank", "cluster")
    ids = [r.RULE_ID for r in ALL_RULES]
    assert len(ids) == len(set(ids))


def test_text_fill_is_lenient() -> None:
    f = Finding("dataloader-bound", Severity.HIGH, 0, (1,), 1_000_000, 10_000_000, "exposed-input-time", {},
                Change("set-num-workers", {"num_workers": 2}))
    assert "num_workers=2" in texts.advice_text(f)
    assert "?" in texts.found_text(f)  # missing evidence renders as "?" instead of raising


def test_cli_advise_json_and_terminal(tmp_path: Path) -> None:
    b = TraceBuilder()
    tensor_cores(b, True)
    path = b.write(tmp_path / "t.json")
    runner = CliRunner()
    res = runner.invoke(cli, ["advise", str(path), "--json", "--no-cache", "--set", "amp_speedup=4"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    top = doc["findings"][0]
    assert top["rule"] == "no-tensor-cores" and top["est_gain_ms"] == pytest.approx(6.0)  # 8 ms x (1 - 1/4)
    assert doc["verdicts"][0]["bound"] == "compute"
    assert any(n["rule"] == "straggler-rank" for n in doc["not_run"])
    res = runner.invoke(cli, ["advise", str(path), "--no-cache", "--top", "1"])
    assert res.exit_code == 0 and "no-tensor-cores" in res.output and "verdict" in res.output


def test_advise_says_what_ingest_repaired(tmp_path: Path) -> None:
    """A truncated trace: advise's answer is of what was read, and it says so (as analyze does), in the
    terminal and in JSON; a whole trace says nothing was repaired."""
    b = TraceBuilder()
    tensor_cores(b, True)
    whole = b.write(tmp_path / "t.json")
    text = whole.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.rindex('"ph"')])  # the last event cut, the document never closed
    runner = CliRunner()
    res = runner.invoke(cli, ["advise", str(cut), "--no-cache"])
    assert res.exit_code == 0 and "truncated-file" in res.output and "error" in res.output
    doc = json.loads(runner.invoke(cli, ["advise", str(cut), "--json", "--no-cache"]).output)
    assert [d["name"] for d in doc["diagnostics"] if d["severity"] == "error"] == ["truncated-file"]
    res = runner.invoke(cli, ["advise", str(whole), "--no-cache"])
    assert "no repairs, nothing dropped" in res.output
    assert json.loads(runner.invoke(cli, ["advise", str(whole), "--json", "--no-cache"]).output)["diagnostics"] == []


def test_analyze_json_carries_findings_and_verdicts(tmp_path: Path) -> None:
    b = TraceBuilder()
    dataloader(b, True)
    res = CliRunner().invoke(cli, ["analyze", str(b.write(tmp_path / "t.json")), "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["findings"][0]["rule"] == "dataloader-bound"
    assert doc["verdicts"][0]["shares_pct"]["input"] == pytest.approx(40.0, abs=0.5)
