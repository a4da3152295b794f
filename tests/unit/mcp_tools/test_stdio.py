"""``stepscope mcp`` over a real stdio session: the server runs as a subprocess, the official SDK's
client (``mcp.client.stdio``) calls every tool on the H100 base trace, and each answer must equal
what ``stepscope analyze --json`` / ``diff --json`` print for the same trace."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'stepscope[mcp]')")

import anyio  # after the skip: anyio comes with the SDK
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from stepscope.mcp.server import TOOLS

from .conftest import BASE, FIXED, cli_json

REPO = Path(__file__).resolve().parents[3]
B, F = str(BASE), str(FIXED)

#: (tool, arguments) called in one session, in this order
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("overview", {"path": B}),
    ("overview", {"path": B}),  # the second answer comes from the server's memory
    ("findings", {"path": B, "top": 3}),
    ("findings", {"path": B, "rule": "dataloader-bound"}),
    ("view", {"path": B, "name": "kernels", "top": 5}),
    ("view", {"path": B, "name": "operators", "top": 4, "sort_by": "host_self_ms", "name_regex": "^aten::"}),
    ("view", {"path": B, "name": "memory", "top": 2}),
    ("timeline", {"path": B, "step": 6, "max_items": 50, "buckets": 10}),
    ("timeline", {"path": B, "start_ns": 0, "end_ns": 1}),
    ("sql", {"path": B, "query": "SELECT name_str, count(*) AS calls, sum(dur_ns) AS total_ns FROM kernels "
                                 "GROUP BY 1 ORDER BY total_ns DESC, name_str LIMIT 3"}),
    ("sql", {"path": B, "query": "SELECT kind_name, count(*) AS n FROM ev GROUP BY 1 ORDER BY 1"}),
    ("sql", {"path": B, "query": "COPY (SELECT 1) TO 'stolen.csv'"}),
    ("diff", {"base": B, "new": F, "top": 3}),
    ("view", {"path": B, "name": "no-such-view"}),
    ("overview", {"path": B, "rank": 7}),
    ("overview", {"path": str(REPO / "no" / "such.json")}),
    ("sql", {"path": B, "query": "SELEC nonsense"}),
    ("whatif", {"path": B, "workers": 4, "scale": ["cudnn=0.5"]}),
    ("whatif", {"path": B}),
    ("whatif", {"path": B, "scale": ["x=nan"]}),
    ("whatif", {"path": B, "remedies": ["fuse-elementwise", "no-launch-blocking"]}),
    ("whatif", {"path": B, "remedies": ["fill_the_gpu"]}),
]


async def _session(cache: Path) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "stepscope", "mcp"], cwd=str(REPO),
                                   env={"PYTHONPATH": str(REPO), "STEPSCOPE_CACHE_DIR": str(cache)})
    out: dict[str, Any] = {"answers": []}
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            out["init"] = await session.initialize()
            out["tools"] = (await session.list_tools()).tools
            for name, args in CALLS:
                t0 = time.perf_counter()
                res = await session.call_tool(name, args)
                text = res.content[0].text  # type: ignore[union-attr]
                out["answers"].append((res.is_error, text, time.perf_counter() - t0))
    return out


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return anyio.run(_session, tmp_path_factory.mktemp("cache"))


def answer(session: dict[str, Any], i: int) -> Any:
    is_error, text, _ = session["answers"][i]
    assert not is_error, text
    return json.loads(text)


def error(session: dict[str, Any], i: int) -> str:
    is_error, text, _ = session["answers"][i]
    assert is_error, text
    assert "\n" not in text and "Traceback" not in text
    return str(text)


def close(a: Any, b: Any) -> None:
    """Equal, floats to the six significant digits the tools send."""
    if isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-12)
    elif isinstance(b, dict):
        assert list(a) == list(b)
        for k in b:
            close(a[k], b[k])
    elif isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y)
    else:
        assert a == b


def test_the_server_lists_every_tool_read_only(session: dict[str, Any]) -> None:
    assert session["init"].server_info.name == "stepscope"
    tools = {t.name: t for t in session["tools"]}
    assert set(tools) == set(TOOLS)
    assert all(t.annotations.read_only_hint for t in tools.values())
    assert "path" in tools["view"].input_schema["properties"]


def test_overview_equals_the_document(session: dict[str, Any], base_doc: dict[str, Any]) -> None:
    ov = answer(session, 0)
    r = base_doc["ranks"][0]
    assert ov["ranks_total"] == 1 and ov["ranks"][0]["rank"] == 0
    assert ov["ranks"][0]["device"] == r["device"]["name"]
    close({k: ov["ranks"][0][k] for k in r["overview"]}, r["overview"])
    assert ov["ranks"][0]["bound_by"] == r["critical_path"]["bound_by"]
    close(ov["verdicts"], base_doc["verdicts"])
    assert ov["findings_total"] == len(base_doc["findings"])
    assert [f["rule"] for f in ov["findings"]] == [f["rule"] for f in base_doc["findings"][:5]]
    assert "kernels" in ov["views"] and "modules" not in ov["views"]  # modules: null in this trace
    assert answer(session, 1) == ov


def test_the_second_call_is_answered_from_memory(session: dict[str, Any]) -> None:
    first, second = session["answers"][0][2], session["answers"][1][2]
    assert second < first / 3, (first, second)


def test_findings_equal_the_document_ranked(session: dict[str, Any], base_doc: dict[str, Any]) -> None:
    top = answer(session, 2)
    assert top["findings_total"] == len(base_doc["findings"]) and len(top["findings"]) == 3
    close(top["findings"], base_doc["findings"][:3])
    one = answer(session, 3)
    assert [f["rule"] for f in one["findings"]] == ["dataloader-bound"]
    close(one["findings"][0]["evidence"], next(f for f in base_doc["findings"]
                                               if f["rule"] == "dataloader-bound")["evidence"])


def test_views_are_the_documents_tables_cut_filtered_and_sorted(session: dict[str, Any],
                                                                base_doc: dict[str, Any]) -> None:
    r = base_doc["ranks"][0]
    k = answer(session, 4)
    close(k["data"], r["kernels"][:5])
    assert k["tables"] == {"kernels": {"rows": len(r["kernels"]), "matched": len(r["kernels"]), "shown": 5}}
    ops = answer(session, 5)
    want = sorted((o for o in r["operators"] if o["name"].lower().startswith("aten::")),
                  key=lambda o: -o["host_self_ms"])
    close(ops["data"], want[:4])
    assert ops["tables"]["operators"]["matched"] == len(want) < len(r["operators"])
    mem = answer(session, 6)
    close(mem["data"]["devices"], r["memory"]["devices"][:2])
    close(mem["data"]["by_op"], r["memory"]["by_op"][:2])
    assert mem["tables"]["memory.by_op"]["rows"] == len(r["memory"]["by_op"])
    assert mem["data"]["allocation_count"] == r["memory"]["allocation_count"]


def test_timeline_window_of_a_step(session: dict[str, Any], base_doc: dict[str, Any]) -> None:
    from stepscope.analysis.timeline import timeline_window
    from stepscope.ingest import load

    tl = answer(session, 7)
    step = next(s for s in base_doc["ranks"][0]["steps"] if s["step"] == "6")
    assert (tl["end_ns"] - tl["start_ns"]) / 1e6 == pytest.approx(step["total_ms"], abs=1e-6)
    want = timeline_window(load(BASE), 0, tl["start_ns"], tl["end_ns"], max_items=50, buckets=10).to_dict()
    assert tl["mode"] == want["mode"] == "aggregate" and tl["event_count"] == want["event_count"] > 50
    assert len(tl["bucket_edges_ns"]) == 11 and tl["bucket_edges_ns"] == want["bucket_edges_ns"]
    close(tl["aggregate"], want["aggregate"])
    assert [s["step"] for s in tl["steps"]] == [s["step"] for s in want["steps"]] and 6 in [s["step"] for s in
                                                                                            tl["steps"]]
    empty = answer(session, 8)
    assert empty["mode"] == "events" and empty["event_count"] == 0 and empty["events"]["name"] == []


def test_sql_over_the_trace_agrees_with_the_views(session: dict[str, Any], base_doc: dict[str, Any]) -> None:
    r = base_doc["ranks"][0]
    top = answer(session, 9)
    assert top["columns"] == ["name_str", "calls", "total_ns"] and top["row_count"] == 3
    for (name, calls, total_ns), k in zip(top["rows"], r["kernels"][:3]):
        assert (name, calls) == (k["name"], k["calls"]) and total_ns / 1e6 == pytest.approx(k["total_ms"], rel=1e-9)
    kinds = answer(session, 10)
    assert {kind: n for kind, n in kinds["rows"]} == r["event_counts"]
    assert "SQL error" in error(session, 11) and not (REPO / "stolen.csv").exists()


def test_diff_equals_stepscope_diff_json(session: dict[str, Any], tmp_path: Path) -> None:
    d = answer(session, 12)
    want = cli_json(tmp_path, "diff", B, F)
    close(d["overall"], want["overall"])
    close(d["kernels"], want["kernels"][:3])
    assert d["narrative"] == want["narrative"]
    assert d["tables"]["operators"]["added_total"] == len(want["tables"]["operators"]["added"])
    assert d["tables"]["operators"]["added"] == want["tables"]["operators"]["added"][:3]
    assert [(f["rule"], f["status"]) for f in d["findings"]] == [(f["rule"], f["status"]) for f in want["findings"]]


def test_bad_input_is_a_one_line_tool_error(session: dict[str, Any]) -> None:
    assert "unknown or empty view 'no-such-view'" in error(session, 13) and "kernels" in error(session, 13)
    assert "rank 7 is not in the trace (ranks: 0)" in error(session, 14)
    assert "such.json: no such file or directory" in error(session, 15)
    assert "SQL error" in error(session, 16)


def test_whatif_equals_stepscope_whatif_json(session: dict[str, Any], tmp_path: Path) -> None:
    w = answer(session, 17)
    want = cli_json(tmp_path, "whatif", B, "--workers", "4", "--scale", "cudnn=0.5")
    close(w, want)
    assert w["job"]["predicted_mean_ms"] < w["job"]["measured_mean_ms"]
    assert "name at least one change" in error(session, 18)
    assert "--scale takes REGEX=FACTOR" in error(session, 19)


def test_whatif_remedies_are_the_flags(session: dict[str, Any], tmp_path: Path) -> None:
    """The MCP tool's ``remedies`` are the standard remedies by name (``--remedy``); another name is refused."""
    close(answer(session, 20), cli_json(tmp_path, "whatif", B, "--fuse-elementwise", "--no-launch-blocking"))
    assert "no such remedy 'fill_the_gpu' (the standard remedies: loader-workers, drop-syncs" in error(session, 21)
