"""The API over the shared real traces (/work/shared/traces beside the repo), served in place."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import stepscope
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import OVERVIEW
from stepscope.server.discover import discover_runs
from stepscope.server.store import RunStore
from tests.unit.server.served import SHARED_TRACES, TestClient, client_for

DLRM = "param_dlrm/dlrm_8rank_v100"
NW0, NW4 = "kineto_tb_plugin/resnet50_num_workers_0", "kineto_tb_plugin/resnet50_num_workers_4"


@pytest.fixture(scope="module")
def real() -> Iterator[tuple[TestClient, dict[str, str]]]:
    if not (SHARED_TRACES / DLRM).is_dir():
        pytest.skip(f"real traces not found at {SHARED_TRACES} (the shared trace set is not beside the repo)")
    store = RunStore(discover_runs(SHARED_TRACES))
    with client_for(store) as c:
        yield c, {e.label: e.id for e in store.entries}


def test_every_shared_run_is_listed(real: tuple[TestClient, dict[str, str]]) -> None:
    _, ids = real
    assert {DLRM, NW0, NW4, "hta/triton_example_a100", "nsys_pipit/cloverleaf_cuda_a100"} <= set(ids)
    assert not any(label.endswith("expected") for label in ids)


def test_eight_ranks_match_the_engine(real: tuple[TestClient, dict[str, str]]) -> None:
    c, ids = real
    doc = c.get(f"/api/v1/runs/{ids[DLRM]}").json()
    assert [r["rank"] for r in doc["ranks"]] == list(range(8)) and doc["cluster"]["rank_count"] == 8
    bundle = analyze(stepscope.load(SHARED_TRACES / DLRM))
    for r in doc["ranks"]:
        engine = bundle.ranks[r["rank"]].require(OVERVIEW)
        assert r["overview"]["avg_step_ms"] == pytest.approx(engine.avg_step_ns / 1e6)
    three = c.get(f"/api/v1/runs/{ids[DLRM]}?rank=3").json()
    assert three["ranks"][0] == doc["ranks"][3]


def test_timeline_on_a_real_rank(real: tuple[TestClient, dict[str, str]]) -> None:
    c, ids = real
    info = c.get(f"/api/v1/runs/{ids[DLRM]}/info").json()["ranks"][5]
    w = c.get(f"/api/v1/runs/{ids[DLRM]}/timeline?rank=5&max_items=1000").json()
    assert w["rank"] == 5 and w["start_ns"] == info["start_ns"] and w["end_ns"] == info["end_ns"]
    assert w["mode"] in ("aggregate", "events") and w["tracks"]


def test_diff_of_the_resnet_pair(real: tuple[TestClient, dict[str, str]]) -> None:
    c, ids = real
    doc = c.get(f"/api/v1/diff?base={ids[NW0]}&new={ids[NW4]}").json()
    rows = {r["category"]: r for r in doc["overall"]}
    assert rows["dataloader"]["new_ms"] < rows["dataloader"]["base_ms"]  # workers hide the input pipeline
