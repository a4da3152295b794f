"""docs/json.md documents every key that ``stepscope analyze --json`` emits (SPEC §12).

The document of a few traces is walked into key paths (``ranks[].overview.avg_step_ms``); the leaf
name of each path must appear in docs/json.md as a code span (`` `avg_step_ms` ``). Keys that are
data rather than names (rank ids) are skipped. A finding's ``evidence`` and ``change.params`` keys
differ per rule, so they must appear on that rule's page, ``docs/rules/<rule>.md``, instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stepscope.cli import cli

DOCS = Path(__file__).resolve().parents[1] / "docs"
SHARED_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"  # as in conftest.py
#: real traces beside the repo (skipped when absent), besides the embedded sample that always runs
SHARED = ("kineto_tb_plugin/resnet50_num_workers_0", "param_dlrm/dlrm_8rank_v100")
#: objects documented on each rule's page, not in json.md
PER_RULE = ("findings[].evidence", "findings[].change.params")


def _analyze_json(path: Path | None) -> dict[str, Any]:
    args = ["analyze", "--json", "--no-cache"] + ([str(path)] if path is not None else [])
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(res.output)
    return doc


def key_paths(obj: Any, path: str = "") -> Iterator[str]:
    """Every key path of a JSON value: ``a.b``, lists as ``a[]``; purely numeric keys are data, skipped."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if str(key).lstrip("-").isdigit():
                continue
            sub = f"{path}.{key}" if path else str(key)
            yield sub
            yield from key_paths(value, sub)
    elif isinstance(obj, list):
        for value in obj:
            yield from key_paths(value, path + "[]")


def leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1].removesuffix("[]")


def documented(name: str, text: str) -> bool:
    """``name`` appears as a code span of its own, or inside a code span's word list / object."""
    return re.search(r"`[^`\n]*(?<![\w])" + re.escape(name) + r"(?![\w])[^`\n]*`", text) is not None


def _docs_of(doc: dict[str, Any]) -> list[str]:
    """Key paths of the document that json.md must name (per-rule objects left out)."""
    return sorted({p for p in key_paths(doc) if not any(p.startswith(r + ".") for r in PER_RULE)})


def _missing_in_rule_pages(doc: dict[str, Any]) -> list[str]:
    """Evidence keys not on the rule's page (keys every grouped finding carries are on advisor.md)."""
    missing = []
    common = (DOCS / "advisor.md").read_text(encoding="utf-8")
    for finding in doc.get("findings") or []:
        page = DOCS / "rules" / f"{finding['rule']}.md"
        text = (page.read_text(encoding="utf-8") if page.is_file() else "") + common
        change = finding.get("change") or {}
        parts = {"evidence": finding.get("evidence") or {}, "change.params": change.get("params") or {}}
        for where, obj in parts.items():
            missing += [f"{finding['rule']}: {where}.{p}" for p in key_paths(obj) if not documented(leaf(p), text)]
    return sorted(set(missing))


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    docs = {"embedded sample": _analyze_json(None)}
    for rel in SHARED:
        if (SHARED_TRACES / rel).exists():
            docs[rel] = _analyze_json(SHARED_TRACES / rel)
    return docs


def test_key_paths_and_leaf_names() -> None:
    doc = {"ranks": [{"overview": {"avg_step_ms": 1.0}, "per_rank": {"3": 1}}], "verdicts": []}
    assert list(key_paths(doc)) == ["ranks", "ranks[].overview", "ranks[].overview.avg_step_ms",
                                    "ranks[].per_rank", "verdicts"]
    assert leaf("ranks[].overview.avg_step_ms") == "avg_step_ms" and leaf("a.steps[]") == "steps"
    assert documented("busy_ms", "| `gpu.busy_ms` | float |")
    assert documented("ms", "`name`, `count`, `ms`") and not documented("ms", "`busy_ms`")


def test_every_key_of_the_analysis_document_is_in_json_md(documents: dict[str, dict[str, Any]]) -> None:
    text = (DOCS / "json.md").read_text(encoding="utf-8")
    missing = {f"{name}: {p}" for name, doc in documents.items() for p in _docs_of(doc)
               if not documented(leaf(p), text)}
    assert not missing, "keys missing from docs/json.md:\n" + "\n".join(sorted(missing))


def test_every_evidence_key_is_on_its_rule_page(documents: dict[str, dict[str, Any]]) -> None:
    missing = [m for doc in documents.values() for m in _missing_in_rule_pages(doc)]
    assert not missing, "evidence / change params missing from docs/rules/<rule>.md:\n" + "\n".join(missing)


def test_the_section_12_minimum_is_emitted(documents: dict[str, dict[str, Any]]) -> None:
    for doc in documents.values():
        assert {"schema_version", "ranks", "cluster", "findings", "diagnostics", "verdicts"} <= set(doc)
        rank = doc["ranks"][0]
        required = {"rank", "device", "overview", "steps", "gpu", "kernels", "operators", "distributed", "idle"}
        assert required <= set(rank)
