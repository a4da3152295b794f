"""The JSON API over real small traces: each answer matches the engine's, and is computed once."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import OVERVIEW
from stepscope.server.discover import discover_runs
from stepscope.server.store import RunStore
from tests.unit.server.served import DEFAULT_TRACE, TestClient, client_for


def test_runs_list(client: TestClient, ids: dict[str, str]) -> None:
    body = client.get("/api/v1/runs").json()
    assert [r["label"] for r in body["runs"]] == sorted(ids)
    assert all(set(r) >= {"id", "label", "kind", "state"} for r in body["runs"])
    assert all(str(Path("/")) not in r["id"] for r in body["runs"])


def test_document_matches_the_engine(client: TestClient, ids: dict[str, str]) -> None:
    doc = client.get(f"/api/v1/runs/{ids['cpu_ddp_2rank']}").json()
    assert doc["schema_version"] == "1" and [r["rank"] for r in doc["ranks"]] == [0, 1]
    one = client.get(f"/api/v1/runs/{ids['cpu_ddp_2rank']}?rank=1").json()
    assert [r["rank"] for r in one["ranks"]] == [1]
    assert one["ranks"][0] == doc["ranks"][1]
    mine = client.get(f"/api/v1/runs/{ids[DEFAULT_TRACE.name]}?rank=0").json()
    expected = analyze(stepscope.load(DEFAULT_TRACE)).ranks[0].require(OVERVIEW)
    assert mine["ranks"][0]["overview"]["avg_step_ms"] == pytest.approx(expected.avg_step_ns / 1e6, rel=1e-9)


def test_runs_list_shows_headline_numbers_once_ready(client: TestClient, ids: dict[str, str]) -> None:
    client.get(f"/api/v1/runs/{ids['h100/base']}")
    run = next(r for r in client.get("/api/v1/runs").json()["runs"] if r["label"] == "h100/base")
    assert run["state"] == "ready" and run["ranks"] == [0] and "H100" in run["device"]
    assert run["avg_step_ms"] > 0 and run["findings"] >= 1 and run["verdict"]


def test_findings_memory_info(client: TestClient, ids: dict[str, str]) -> None:
    rid = ids["h100/base"]
    f = client.get(f"/api/v1/runs/{rid}/findings").json()
    assert {x["rule"] for x in f["findings"]} >= {"dataloader-bound"} and f["verdicts"][0]["bound"] == "input"
    mem = client.get(f"/api/v1/runs/{rid}/memory?rank=0").json()
    gpu = next(c for c in mem["curves"] if c["device"].startswith("GPU"))
    assert len(gpu["ts_ms"]) == len(gpu["allocated_mb"]) > 10 and max(gpu["allocated_mb"]) > 100
    info = client.get(f"/api/v1/runs/{rid}/info").json()["ranks"][0]
    assert info["end_ns"] > info["start_ns"] and [s["step"] for s in info["steps"]] == [5, 6, 7, 8, 9]


def test_timeline_zooms_from_aggregate_to_events(client: TestClient, ids: dict[str, str]) -> None:
    rid = ids["h100/base"]
    whole = client.get(f"/api/v1/runs/{rid}/timeline?rank=0&max_items=500").json()
    assert whole["mode"] == "aggregate" and whole["event_count"] > 500
    step = client.get(f"/api/v1/runs/{rid}/info").json()["ranks"][0]["steps"][0]
    a = step["start_ns"]
    narrow = client.get(f"/api/v1/runs/{rid}/timeline?rank=0&start_ns={a}&end_ns={a + 200_000}").json()
    assert narrow["mode"] == "events" and narrow["start_ns"] == a and narrow["end_ns"] == a + 200_000
    assert narrow["events"]["name"] and len(narrow["events"]["name"]) == narrow["event_count"]


@pytest.mark.parametrize(("start", "end"), [(-(1 << 62), 1 << 62), (0, 1 << 62), (-(1 << 62), 0),
                                            ("first", 1 << 62), (-(1 << 62), "last"), ("first", "last+1e18")])
def test_timeline_window_anywhere_in_the_documented_range(client: TestClient, ids: dict[str, str],
                                                          start: int | str, end: int | str) -> None:
    """Bounds within ±2^62 are accepted (params.NS_LIMIT): never a 500, busy fractions within [0, 1]."""
    rid = ids["h100/base"]
    r0 = client.get(f"/api/v1/runs/{rid}/info").json()["ranks"][0]
    a = r0["start_ns"] if start == "first" else start
    b = {"last": r0["end_ns"], "last+1e18": r0["end_ns"] + 10**18}.get(str(end), end)
    r = client.get(f"/api/v1/runs/{rid}/timeline?rank=0&start_ns={a}&end_ns={b}&max_items=100")
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["bucket_edges_ns"][0] == a and d["bucket_edges_ns"][-1] == b
    assert all(x < y for x, y in zip(d["bucket_edges_ns"], d["bucket_edges_ns"][1:]))
    assert all(0.0 <= f <= 1.0 for cells in d["aggregate"] or [] for f in cells["busy_frac"])


@pytest.mark.parametrize("qs", ["rank=0&start_ns=10&end_ns=5", "rank=0&start_ns=abc", "rank=0&max_items=0",
                                "rank=0&max_items=99999999", "rank=0&start_ns=1e9", "rank=0&start_ns=" + "9" * 30,
                                "rank=0&bogus=1", "rank=0&rank=0", "rank=0&start_ns=" + "1" * 70])
def test_timeline_rejects_nonsense(client: TestClient, ids: dict[str, str], qs: str) -> None:
    r = client.get(f"/api/v1/runs/{ids['h100/base']}/timeline?{qs}")
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"error", "status"} and r.json()["status"] == 400


def test_unknown_rank_is_404(client: TestClient, ids: dict[str, str]) -> None:
    for path in ("", "/memory", "/timeline"):
        r = client.get(f"/api/v1/runs/{ids['h100/base']}{path}?rank=7")
        assert r.status_code == 404 and "no rank 7" in r.json()["error"]


def test_diff_of_two_runs(client: TestClient, ids: dict[str, str]) -> None:
    r = client.get(f"/api/v1/diff?base={ids['h100/base']}&new={ids['h100/fixed']}")
    assert r.status_code == 200
    doc = r.json()
    step = next(x for x in doc["overall"] if x["category"] == "step")
    assert step["new_ms"] < step["base_ms"]
    assert doc["base"]["label"] == "h100/base" and doc["new"]["label"] == "h100/fixed"
    assert client.get("/api/v1/diff?base=" + ids["h100/base"]).status_code == 400


def test_each_run_is_analysed_once_under_concurrent_requests(served_dir: Path) -> None:
    calls: list[str] = []

    def loader(path: Path) -> Any:
        calls.append(path.name)
        return stepscope.load(path)

    store = RunStore(discover_runs(served_dir), loader=loader)
    ids = {e.label: e.id for e in store.entries}
    ddp = ids["cpu_ddp_2rank"]
    paths = [f"/api/v1/runs/{ddp}", f"/api/v1/runs/{ddp}/findings", f"/api/v1/runs/{ddp}/info",
             f"/api/v1/diff?base={ids['h100/base']}&new={ids['h100/fixed']}"]
    with client_for(store) as c, ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(lambda p: c.get(p).status_code, paths * 10))
    assert codes == [200] * 40
    assert sorted(calls) == ["base", "cpu_ddp_2rank", "fixed"]


def test_diff_is_computed_once(served_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import stepscope.compare.diff as diff_mod

    real, count = diff_mod.compare, []
    monkeypatch.setattr(diff_mod, "compare", lambda *a, **k: count.append(1) or real(*a, **k))
    store = RunStore(discover_runs(served_dir))
    ids = {e.label: e.id for e in store.entries}
    url = f"/api/v1/diff?base={ids['h100/base']}&new={ids['h100/fixed']}"
    with client_for(store) as c, ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda _: c.get(url).content, range(8)))
    assert len(set(bodies)) == 1 and len(count) == 1


def test_a_broken_run_reports_its_error_and_the_rest_still_works(tmp_path: Path) -> None:
    (tmp_path / "bad.pt.trace.json").write_text('{"traceEvents": [ {"ph": "X", "name": ')
    (tmp_path / "junk.pt.trace.json.gz").write_bytes(b"\x1f\x8b not gzip at all")
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / DEFAULT_TRACE.name).write_bytes(DEFAULT_TRACE.read_bytes())
    store = RunStore(discover_runs(tmp_path))
    with client_for(store) as c:
        ids = {r["label"]: r["id"] for r in c.get("/api/v1/runs").json()["runs"]}
        r = c.get(f"/api/v1/runs/{ids['junk.pt.trace.json.gz']}")
        assert r.status_code in (422, 500) and r.json()["error"] and "Traceback" not in r.text
        assert c.get(f"/api/v1/runs/{ids['junk.pt.trace.json.gz']}/findings").status_code == r.status_code
        assert c.get(f"/api/v1/runs/{ids['good']}").status_code == 200
        states = {x["label"]: x["state"] for x in c.get("/api/v1/runs").json()["runs"]}
        assert states["junk.pt.trace.json.gz"] == "error" and states["good"] == "ready"
        assert c.get(f"/api/v1/runs/{ids['bad.pt.trace.json']}").status_code in (200, 422)  # salvaged or refused


def test_responses_are_json(client: TestClient, ids: dict[str, str]) -> None:
    for path in ("/api/v1/health", "/api/v1/runs", f"/api/v1/runs/{ids['h100/base']}/info"):
        r = client.get(path)
        assert r.headers["content-type"].startswith("application/json")
        json.loads(r.text)


def test_runs_list_says_when_each_run_was_recorded(client: TestClient, ids: dict[str, str]) -> None:
    """h100/base and h100/fixed: their tensorboard_trace_handler names date them (base first)."""
    runs = {r["label"]: r for r in client.get("/api/v1/runs").json()["runs"]}
    base, fixed = runs["h100/base"], runs["h100/fixed"]
    assert base["recorded_from"] == fixed["recorded_from"] == "file name"
    assert 0 < base["recorded_ns"] < fixed["recorded_ns"]
    assert runs[DEFAULT_TRACE.name]["recorded_from"] in ("file name", "file time")
