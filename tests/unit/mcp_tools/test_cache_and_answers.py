"""The MCP server's trace cache and document cuts, without the SDK."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.errors import StepscopeError, UsageError
from stepscope.mcp import answers
from stepscope.mcp.cache import TraceCache

from .conftest import BASE, FIXED


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_trace_is_loaded_once_until_its_files_change(tmp_path: Path) -> None:
    run = _copy(BASE, tmp_path / "run")
    cache = TraceCache()
    first = cache.get(str(run))
    assert cache.get(str(run)) is first and cache.loads == 1
    f = next(run.iterdir())
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    again = cache.get(str(run))
    assert again is not first and cache.loads == 2
    assert again.doc["ranks"][0]["overview"] == first.doc["ranks"][0]["overview"]


def test_the_least_recently_used_trace_is_dropped(tmp_path: Path) -> None:
    cache = TraceCache(capacity=1)
    a = cache.get(str(BASE))
    cache.get(str(FIXED))
    assert cache.get(str(BASE)) is not a and cache.loads == 3


def test_root_resolves_relative_paths_and_refuses_others(tmp_path: Path) -> None:
    root = BASE.parent
    cache = TraceCache(root=root)
    assert cache.resolve("base") == BASE.resolve()
    with pytest.raises(UsageError, match="outside the served root"):
        cache.resolve("../../../README.md")
    with pytest.raises(UsageError, match="nope: no such file"):
        cache.resolve("nope")
    with pytest.raises(UsageError, match="name a trace"):
        cache.resolve(" ")


def test_an_unreadable_trace_is_one_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(StepscopeError) as exc:
        TraceCache().get(str(bad))
    assert "bad.json" in str(exc.value) and "\n" not in str(exc.value)


def test_text_is_compact_deterministic_and_rounded() -> None:
    obj: dict[str, Any] = {"b_ms": 1 / 3, "a": [float("nan"), 12345678.9], "n": 7}
    out = answers.text(obj)
    assert out == '{"b_ms":0.333333,"a":[null,12345700.0],"n":7}' and answers.text(obj) == out


def test_too_long_an_answer_asks_for_fewer_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answers, "MAX_CHARS", 50)
    with pytest.raises(UsageError, match="fewer rows"):
        answers.text({"x": "y" * 100})


def test_view_arguments_are_checked(base_doc: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="sort_by 'nope'"):
        answers.view(base_doc, "kernels", sort_by="nope")
    with pytest.raises(UsageError, match="name_regex"):
        answers.view(base_doc, "kernels", name_regex="(")
    with pytest.raises(UsageError, match="min_severity"):
        answers.findings(base_doc, min_severity="dire")
    with pytest.raises(UsageError, match=r"rules found: .*dataloader-bound"):
        answers.findings(base_doc, rule="nope")


def test_findings_by_severity_keep_the_ranked_order(base_doc: dict[str, Any]) -> None:
    high = answers.findings(base_doc, min_severity="high", top=100)["findings"]
    assert high == [f for f in base_doc["findings"] if f["severity"] == "high"] and high


def test_a_document_level_view(base_doc: dict[str, Any]) -> None:
    v = answers.view(base_doc, "verdicts")
    assert v["rank"] is None and json.dumps(v["data"]) == json.dumps(base_doc["verdicts"][:10])


def test_stepscope_mcp_without_the_sdk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from stepscope.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a))
    with pytest.raises(SystemExit) as exc:
        main(["mcp"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == ("stepscope: error: stepscope mcp needs the MCP SDK: "
                                               "pip install 'stepscope[mcp]'")


def test_a_step_timed_without_the_profiler_is_its_own_answer(tmp_path: Path) -> None:
    """``step_ms`` (the tools' ``--step-ms``) on a host-bound CUDA trace: the profiler's cost per op is measured
    from it (2.0 ms less a step over 1,001 ops) and the verdict says whose step it was; the trace without it
    stays in memory as its own answer."""
    from tests.unit.analysis.test_profiler_cost import small_ops

    small_ops().load(tmp_path)
    cache = TraceCache()
    given = cache.get(str(tmp_path), 8.1)
    plain = cache.get(str(tmp_path))
    assert given is not plain and cache.get(str(tmp_path), 8.1) is given and cache.loads == 2
    unprofiled = given.doc["verdicts"][0]["unprofiled"]
    assert unprofiled["cost_source"] == "given" and unprofiled["event_cost_us"] == pytest.approx(1.998)
    assert "(--step-ms)" in answers.text(answers.overview(given.doc, None))
    assert plain.doc["verdicts"][0]["unprofiled"]["cost_source"] == "calibrated"
