"""``POST /api/v1/runs/{id}/whatif``: the answer is ``simulate``'s, bad input is a one-line 400, the
guards around the one route with a body hold, and a replay blocks no other request."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.batch import LargerBatch
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.unprofiled import WithoutProfiler
from stepscope.report.whatif_view import whatif_dict
from stepscope.server import store as store_module
from stepscope.server.discover import discover_runs
from stepscope.server.store import RunStore
from tests.unit.server.served import DATA, TestClient, client_for

BASE = DATA / "h100_cuda_train" / "base"


def post(client: TestClient, rid: str, body: Any, **headers: str) -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(f"/api/v1/runs/{rid}/whatif", content=data,
                       headers={"content-type": "application/json", **headers})


@pytest.fixture(scope="module")
def base_trace() -> stepscope.Trace:
    return stepscope.load(BASE)


def _expected(trace: stepscope.Trace, changes: list[tf.Transform], label: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(whatif_dict(simulate(trace, changes), label)))
    return out


def test_workers_is_the_simulation(client: TestClient, ids: dict[str, str], base_trace: stepscope.Trace) -> None:
    r = post(client, ids["h100/base"], {"workers": 8})
    assert r.status_code == 200, r.text
    got = r.json()
    want = _expected(base_trace, [tf.LoaderWorkers(8)], "h100/base")
    assert got["job"] == want["job"] and got["ranks"] == want["ranks"] and got["changes"] == want["changes"]
    assert got["source"] == "h100/base" and got["options"] == {"workers": 8}
    assert got["job"]["bound_before"] == "input" and got["job"]["bound_after"] == "host"


def test_every_option_together_is_the_simulation(client: TestClient, ids: dict[str, str],
                                                 base_trace: stepscope.Trace) -> None:
    body = {"workers": 4, "host_overhead": 0.5, "host_in": ["^Optimizer.step=0.5"], "drop_syncs": "item",
            "pin_copies": True, "scale": ["gemm|conv=0.5", "elementwise=0.8"], "overlap_comm": True}
    got = post(client, ids["h100/base"], body).json()
    changes: list[tf.Transform] = [
        tf.LoaderWorkers(4), tf.HostOverhead(0.5), tf.HostOverhead(0.5, tf.Select("^Optimizer.step")),
        tf.DropSyncs(tf.Select("item")), tf.PinnedCopies(), tf.ScaleDevice(tf.Select("gemm|conv"), 0.5),
        tf.ScaleDevice(tf.Select("elementwise"), 0.8), tf.OverlapComm()]
    want = _expected(base_trace, changes, "h100/base")
    assert got["job"] == want["job"] and got["changes"] == want["changes"] and len(got["changes"]) == 8


def test_each_remedy_replayed_through_its_options(client: TestClient, ids: dict[str, str]) -> None:
    """The document's ``remedies[].options`` posted back give that remedy's predicted mean step, and so does
    its name (``{"remedy": [name]}``, ``stepscope whatif --remedy NAME``)."""
    doc = client.get(f"/api/v1/runs/{ids['h100/base']}").json()
    sec = doc["ranks"][0]["remedies"]
    for remedy in sec["remedies"]:
        job = post(client, ids["h100/base"], remedy["options"]).json()["job"]
        assert job["predicted_mean_ms"] == pytest.approx(remedy["predicted_mean_ms"], abs=1e-3), remedy["remedy"]
        named = post(client, ids["h100/base"], {"remedy": [remedy["remedy"]]}).json()["job"]
        assert named["predicted_mean_ms"] == job["predicted_mean_ms"], remedy["remedy"]
        assert job["measured_mean_ms"] == pytest.approx(sec["measured_mean_ms"], abs=1e-3)


def test_workers_from_to_on_a_loader_that_has_workers(client: TestClient, ids: dict[str, str]) -> None:
    """h100/fixed loads with worker processes: its count is asked for (422, one line), and '8:16' is the
    simulation of LoaderWorkers(16, 8); 'FROM:TO' with FROM > 0 on the base (no workers) is refused too."""
    r = post(client, ids["h100/fixed"], {"workers": 8})
    assert r.status_code == 422 and "give --workers FROM:TO" in r.json()["error"]
    got = post(client, ids["h100/fixed"], {"workers": "8:16"}).json()
    want = _expected(stepscope.load(DATA / "h100_cuda_train" / "fixed"), [tf.LoaderWorkers(16, 8)], "h100/fixed")
    assert got["job"] == want["job"] and got["options"] == {"workers": "8:16"}
    r = post(client, ids["h100/base"], {"workers": "2:4"})
    assert r.status_code == 422 and "loads in the main process" in r.json()["error"]


def test_two_ranks(client: TestClient, ids: dict[str, str]) -> None:
    got = post(client, ids["cpu_ddp_2rank"], {"workers": 2, "overlap_comm": True}).json()
    want = _expected(stepscope.load(DATA / "cpu_ddp_2rank"), [tf.LoaderWorkers(2), tf.OverlapComm()], "x")
    assert [r["rank"] for r in got["ranks"]] == [0, 1] and got["job"] == want["job"]


def test_fix_rank(client: TestClient, ids: dict[str, str]) -> None:
    """A rank of the run is fixed as ``--fix-rank`` does; one not in it is a 422 naming it."""
    got = post(client, ids["cpu_ddp_2rank"], {"fix_rank": [1]}).json()
    want = _expected(stepscope.load(DATA / "cpu_ddp_2rank"), [tf.FixSlowRank(1)], "x")
    assert got["job"] == want["job"] and got["options"] == {"fix_rank": [1]}
    r = post(client, ids["cpu_ddp_2rank"], {"fix_rank": [5]})
    assert r.status_code == 422 and "no rank 5 in the trace" in r.json()["error"]


def test_batch(client: TestClient, ids: dict[str, str], base_trace: stepscope.Trace) -> None:
    """``batch`` is ``--batch``: the simulation, its samples/s change with it (refused on a trace
    without shapes: tests/unit/analysis/test_whatif_batch.py)."""
    got = post(client, ids["h100/base"], {"batch": "64:128"}).json()
    want = _expected(base_trace, [LargerBatch(64, 2.0)], "h100/base")
    assert got["job"] == want["job"] and got["job"]["samples_per_step_factor"] == 2.0
    assert got["job"]["predicted_mean_ms"] > got["job"]["measured_mean_ms"]


BAD = [
    (b"{", "not JSON"), (b"\xff\xfe", "not JSON"), (b"[1]", "JSON object"), (b'"workers"', "JSON object"),
    ({}, "name at least one change"), ({"pin_copies": False}, "name at least one change"),
    ({"workers": 8, "bogus": 1}, "unknown field 'bogus'"), ({"workers": "8"}, "workers must be an integer"),
    ({"workers": 0}, "workers must be an integer"), ({"workers": True}, "workers must be an integer"),
    ({"workers": 2.5}, "workers must be an integer"), ({"workers": 5000}, "workers must be an integer"),
    ({"workers": "a:b"}, "workers takes N or FROM:TO"), ({"workers": "2:0"}, "workers takes N or FROM:TO"),
    ({"drop_syncs": "("}, "drop_syncs: not a regular expression"), ({"drop_syncs": ""}, "drop_syncs must be"),
    ({"drop_syncs": 5}, "drop_syncs must be"), ({"drop_syncs": "a" * 300}, "drop_syncs must be"),
    ({"pin_copies": "yes"}, "pin_copies must be true or false"), ({"overlap_comm": 1}, "overlap_comm must be"),
    ({"fuse_elementwise": "yes"}, "fuse_elementwise must be true or false"), ({"fill_sms": 1}, "fill_sms must be"),
    ({"remedy": ["fill_sms"]}, "remedy must be a list of standard remedy names"), ({"remedy": "amp"}, "remedy must"),
    ({"host_overhead": -1}, "host_overhead must be a number"), ({"host_overhead": 1e9}, "host_overhead must be"),
    ({"host_overhead": "0"}, "host_overhead must be a number"), (b'{"host_overhead": NaN}', "only finite numbers"),
    (b'{"host_overhead": Infinity}', "only finite numbers"), ({"scale": "gemm=0.5"}, "scale must be a list"),
    ({"scale": ["gemm"]}, "scale takes REGEX=FACTOR"), ({"scale": ["gemm=x"]}, "scale takes REGEX=FACTOR"),
    ({"scale": ["gemm=-1"]}, "scale takes REGEX=FACTOR"), ({"scale": ["gemm=nan"]}, "scale takes REGEX=FACTOR"),
    ({"scale": ["a[=0.5"]}, "scale: not a regular expression"), ({"scale": [1]}, "scale must be a list"),
    ({"scale": ["g=1"] * 9}, "at most 8"), ({"host_in": ["x" * 300 + "=1"]}, "is too long"),
    ({"host_in": ["=0.5"]}, "host_in takes REGEX=FACTOR"), ({"fix_rank": 7}, "fix_rank must be a list"),
    ({"fix_rank": [True]}, "fix_rank must be a list"), ({"fix_rank": [-1]}, "fix_rank must be a list"),
    ({"batch": 32}, "batch must be 'FROM:TO'"), ({"batch": "32"}, "batch takes FROM:TO"),
    ({"batch": "0:64"}, "batch takes FROM:TO"), ({"batch": "1:" + "9" * 70}, "batch must be 'FROM:TO'"),
]


@pytest.mark.parametrize("body, message", BAD)
def test_bad_input_is_a_one_line_400(client: TestClient, ids: dict[str, str], body: Any, message: str) -> None:
    r = post(client, ids["h100/base"], body)
    assert r.status_code == 400, (body, r.text)
    err = r.json()
    assert set(err) == {"error", "status"} and err["status"] == 400
    assert message in err["error"] and "\n" not in err["error"]


def test_the_guards_around_the_one_body(client: TestClient, ids: dict[str, str]) -> None:
    rid = ids["h100/base"]
    url = f"/api/v1/runs/{rid}/whatif"
    body = json.dumps({"workers": 8}).encode()
    assert client.post(url, content=body, headers={"content-type": "text/plain"}).status_code == 415
    assert client.post(url, content=body).status_code == 415  # no type at all
    big = json.dumps({"drop_syncs": "x" * 9000}).encode()
    assert post(client, rid, big).status_code == 413
    chunked = client.post(url, content=iter([body]), headers={"content-type": "application/json"})
    assert chunked.status_code == 413
    assert post(client, rid, {"workers": 8}, origin="http://evil.example").status_code == 403
    assert post(client, rid, {"workers": 8}, origin="http://127.0.0.1:8123").status_code == 200
    assert client.get(url).status_code == 405
    assert post(client, "0" * 12, {"workers": 8}).status_code == 404
    assert client.post("/api/v1/runs", content=body, headers={"content-type": "application/json"}).status_code == 405
    assert client.post(f"/api/v1/runs/{rid}", content=body,
                       headers={"content-type": "application/json"}).status_code == 405
    assert client.post(url + "?rank=0", content=body, headers={"content-type": "application/json"}).status_code == 400
    r = post(client, rid, {"workers": 8}, host="evil.example")
    assert r.status_code == 400 and "Host" in r.json()["error"]


def test_replayed_once_per_request_and_blocks_nothing_else(served_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = RunStore(discover_runs(served_dir))
    calls: list[int] = []
    release = threading.Event()
    real = store_module.simulate

    def slow(trace: Any, changes: Any) -> Any:
        calls.append(1)
        assert release.wait(60)
        return real(trace, changes)

    monkeypatch.setattr(store_module, "simulate", slow)
    with client_for(store) as c:
        rid = next(r["id"] for r in c.get("/api/v1/runs").json()["runs"] if r["label"] == "h100/base")
        assert c.get(f"/api/v1/runs/{rid}").status_code == 200  # analysed before the replay starts
        answers: list[Any] = []
        posts = [threading.Thread(target=lambda: answers.append(post(c, rid, {"workers": 8}))) for _ in range(3)]
        for t in posts:
            t.start()
        while not calls:
            threading.Event().wait(0.01)
        assert c.get(f"/api/v1/runs/{rid}/findings").status_code == 200  # while the replay runs
        assert c.get("/api/v1/runs").status_code == 200
        release.set()
        for t in posts:
            t.join(60)
    assert len(calls) == 1 and [a.status_code for a in answers] == [200] * 3
    assert len({a.content for a in answers}) == 1


def test_unprofiled_is_the_simulation_applied_first(client: TestClient, ids: dict[str, str],
                                                    base_trace: stepscope.Trace) -> None:
    """The form's "Without the profiler (µs / op)": the profiler's cost removed before the other changes,
    as ``stepscope whatif --unprofiled 8 --host-overhead 0``."""
    got = post(client, ids["h100/base"], {"unprofiled": 8, "host_overhead": 0}).json()
    want = _expected(base_trace, [WithoutProfiler(8000), tf.HostOverhead(0.0)], "h100/base")
    assert got["job"] == want["job"] and got["changes"] == want["changes"]
    assert got["changes"][0].startswith("each op the profiler recorded costs 8 µs less")
    bad = post(client, ids["h100/base"], {"unprofiled": -1})
    assert bad.status_code == 400 and "unprofiled" in bad.json()["error"]
