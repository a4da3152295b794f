"""``step_ms`` on the API and ``serve --step-ms``: the step timed without the profiler (docs/serve.md).

On ``h200_models/r3/gpt2_bf16`` (bound by the host as recorded on the H200; the padded vocabulary
measured 33.05 ms without the profiler) a given step measures the profiler's cost per op
(``cost_source`` "given", 4.835 µs where the calibrated cost is 8) and the numbers that hang on it
move: the verdict's step without the profiler, the findings' gains, the remedies replayed on that
step. Every answer equals what ``stepscope analyze --json --step-ms`` prints; each step is its own
cached answer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stepscope.cli import cli
from stepscope.server import store as store_mod
from stepscope.server.discover import discover_runs
from stepscope.server.store import RunStore
from tests.unit.server.served import DATA, TestClient, client_for

RUN = DATA / "h200_models" / "r3" / "gpt2_bf16"
GIVEN_MS = 33.05


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(RUN, root / "gpt2_bf16")
    return root


@pytest.fixture(scope="module")
def store(served: Path) -> RunStore:
    return RunStore(discover_runs(served))


@pytest.fixture(scope="module")
def client(store: RunStore) -> Any:
    with client_for(store) as c:
        yield c


@pytest.fixture(scope="module")
def rid(client: TestClient) -> str:
    return str(client.get("/api/v1/runs").json()["runs"][0]["id"])


def analyze_json(path: Path, *args: str) -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["analyze", str(path), "--json", "--no-cache", *args])
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(res.output)
    return doc


def same_answers(served: dict[str, Any], printed: dict[str, Any]) -> None:
    """The document the server gives is the one the command line prints (its path aside)."""
    assert served["ranks"] == printed["ranks"]
    assert served["verdicts"] == printed["verdicts"] and served["findings"] == printed["findings"]


def test_a_given_step_is_what_analyze_step_ms_prints(client: TestClient, rid: str, served: Path) -> None:
    plain = client.get(f"/api/v1/runs/{rid}").json()
    given = client.get(f"/api/v1/runs/{rid}?step_ms={GIVEN_MS}").json()
    same_answers(given, analyze_json(served / "gpt2_bf16", "--step-ms", str(GIVEN_MS)))
    same_answers(plain, analyze_json(served / "gpt2_bf16"))
    pc, pc0 = given["ranks"][0]["profiler_cost"], plain["ranks"][0]["profiler_cost"]
    assert (pc0["cost_source"], pc0["event_cost_us"]) == ("calibrated", 8.0) and pc0["low_cost_step_ms"] is not None
    assert (pc["cost_source"], pc["measured_step_ms"], pc["low_cost_step_ms"]) == ("given", GIVEN_MS, None)
    assert pc["event_cost_us"] == pytest.approx(4.835)
    verdict = given["verdicts"][0]
    assert verdict["unprofiled"]["cost_source"] == "given" and "(--step-ms)" in verdict["text"]
    assert pc["unprofiled_step_ms"] > pc0["unprofiled_step_ms"] + 2  # less cost removed: a longer step (35.3, 32.9)
    gain = {f["rule"]: f["est_gain_ms"] for f in given["findings"]}
    gain0 = {f["rule"]: f["est_gain_ms"] for f in plain["findings"]}
    assert gain["gemm-dims-not-multiple-of-8"] <= 1.2 < gain0["gemm-dims-not-multiple-of-8"]
    findings = client.get(f"/api/v1/runs/{rid}/findings?step_ms={GIVEN_MS}").json()
    assert findings == {"findings": given["findings"], "verdicts": given["verdicts"]}
    one = client.get(f"/api/v1/runs/{rid}?rank=0&step_ms={GIVEN_MS}").json()
    assert one["ranks"] == given["ranks"]


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "1e400", "abc", "1_0", "+5", "0x10", "2e9"])
def test_a_step_that_is_not_one_is_a_400(client: TestClient, rid: str, bad: str) -> None:
    for path in (f"/api/v1/runs/{rid}?step_ms={bad}", f"/api/v1/runs/{rid}/findings?step_ms={bad}"):
        r = client.get(path)
        assert r.status_code == 400, r.text
        msg = r.json()["error"]
        assert msg.startswith("step_ms must be a number of milliseconds above 0") and "\n" not in msg
    r = client.post(f"/api/v1/runs/{rid}/whatif?step_ms={bad}", json={"host_overhead": 0})
    assert r.status_code == 400 and r.json()["error"].startswith("step_ms must be")


def test_only_the_routes_it_changes_take_step_ms(client: TestClient, rid: str) -> None:
    for route in ("info", "memory?rank=0", "timeline?rank=0"):
        r = client.get(f"/api/v1/runs/{rid}/{route}{'&' if '?' in route else '?'}step_ms=30")
        assert r.status_code == 400 and "unknown query parameter 'step_ms'" in r.json()["error"]
    assert client.get(f"/api/v1/runs/{rid}?step_ms={GIVEN_MS}&step_ms=30").status_code == 400  # given twice


def test_each_step_is_its_own_answer_made_once(served: Path) -> None:
    store = RunStore(discover_runs(served))
    rid = store.entries[0].id
    at_given = store.get(rid, GIVEN_MS)
    assert store.get(rid, GIVEN_MS) is at_given and store.get(rid, 33.050) is at_given  # "33.05" and "33.050"
    other = store.get(rid, 40.0)
    assert other is not at_given and store.get(rid) is not at_given
    assert json.loads(other.doc)["ranks"][0]["profiler_cost"]["measured_step_ms"] == 40.0
    assert json.loads(store.get(rid, GIVEN_MS).doc)["ranks"][0]["profiler_cost"]["measured_step_ms"] == GIVEN_MS
    assert json.loads(store.get(rid).doc)["ranks"][0]["profiler_cost"]["cost_source"] == "calibrated"
    assert store.listing()[0]["verdict"] == json.loads(store.get(rid).findings)["verdicts"][0]["text"]


def test_the_steps_kept_are_the_last_few(served: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_mod, "STEP_CACHE", 2)
    store = RunStore(discover_runs(served))
    rid = store.entries[0].id
    first = store.get(rid, 30.0)
    store.get(rid, 31.0)
    assert store.get(rid, 30.0) is first  # used again: kept
    store.get(rid, 32.0)  # 31 goes, then 30
    store.get(rid, 33.0)
    again = store.get(rid, 30.0)
    assert again is not first and again.doc == first.doc


def test_serve_step_ms_gives_every_run_the_step(served: Path, client: TestClient, rid: str) -> None:
    """``serve --step-ms`` (the store's ``step_ms``): the run's own answers at that step — the same as a
    request's ``step_ms`` on a server without it —, the runs list's verdict too; a request's other step
    overrides it."""
    store = RunStore(discover_runs(served), step_ms=GIVEN_MS)
    with client_for(store) as c:
        own = c.get(f"/api/v1/runs/{rid}").json()
        assert own == client.get(f"/api/v1/runs/{rid}?step_ms={GIVEN_MS}").json()
        assert store.get(rid, GIVEN_MS) is store.get(rid)  # the served step asked for: the run's own answer
        assert c.get("/api/v1/runs").json()["runs"][0]["verdict"] == own["verdicts"][0]["text"]
        other = c.get(f"/api/v1/runs/{rid}?step_ms=40").json()["ranks"][0]["profiler_cost"]
        assert (other["cost_source"], other["measured_step_ms"]) == ("given", 40.0)


def test_whatif_unprofiled_true_takes_the_cost_the_step_measures(client: TestClient, rid: str, served: Path) -> None:
    """``"unprofiled": true`` is ``whatif --unprofiled`` without a value: at a given step the cost it measures
    (4.835 µs), else the calibrated 8 µs; each step its own replay (the same body, two answers)."""
    body = {"unprofiled": True, "host_overhead": 0}
    at_given = client.post(f"/api/v1/runs/{rid}/whatif?step_ms={GIVEN_MS}", json=body).json()
    plain = client.post(f"/api/v1/runs/{rid}/whatif", json=body).json()
    assert "4.835 µs" in at_given["changes"][0] and "8 µs" in plain["changes"][0]
    res = CliRunner().invoke(cli, ["whatif", str(served / "gpt2_bf16"), "--unprofiled", "--host-overhead", "0",
                                   "--step-ms", str(GIVEN_MS), "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.output)
    assert at_given["job"] == printed["job"] and at_given["changes"] == printed["changes"]
    assert at_given["job"]["predicted_mean_ms"] > plain["job"]["predicted_mean_ms"]
    again = client.post(f"/api/v1/runs/{rid}/whatif", json=body).json()
    assert again == plain
    bad = client.post(f"/api/v1/runs/{rid}/whatif", json={"unprofiled": "yes"})
    assert bad.status_code == 400 and "unprofiled must be true" in bad.json()["error"]


def test_a_map_reduce_run_at_a_step_is_the_whole_models(served: Path, client: TestClient, rid: str) -> None:
    """The map-reduce path gives its ranks the step too: the same document as the run analysed whole."""
    store = RunStore(discover_runs(served), map_reduce=True)
    with client_for(store) as c:
        mr = c.get(f"/api/v1/runs/{rid}?step_ms={GIVEN_MS}").json()
    assert store.get(rid).bundle is None  # analysed by map-reduce
    same_answers(mr, client.get(f"/api/v1/runs/{rid}?step_ms={GIVEN_MS}").json())


@pytest.mark.parametrize("bad", ["nan", "inf", "0", "-2", "abc"])
def test_serve_refuses_a_step_that_is_not_one(served: Path, bad: str) -> None:
    res = CliRunner().invoke(cli, ["serve", str(served), "--no-browser", "--step-ms", bad])
    assert res.exit_code == 2 and "--step-ms" in res.output and "Traceback" not in res.output
