"""Runs of several rank files served through the map-reduce path: every answer the same as the
whole model's, the server holding summaries only, and a rank's model loaded only for a view that
needs events (at most :data:`~stepscope.server.ranks.LOADED_RANKS` kept)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.server.discover import discover_runs
from stepscope.server.ranks import LOADED_RANKS, LazyRanks, shift_window
from stepscope.server.store import RunStore
from tests.unit.server.served import SHARED_TRACES, TestClient, client_for

DDP, H100 = "cpu_ddp_2rank", "h100/base"
DLRM = SHARED_TRACES / "param_dlrm" / "dlrm_8rank_v100"


@pytest.fixture(scope="module")
def pair(served_dir: Path) -> Iterator[tuple[TestClient, TestClient, RunStore, dict[str, str]]]:
    """The same runs served whole and the default way (map-reduce for the 2-rank run)."""
    entries = discover_runs(served_dir)
    whole, lazy = RunStore(entries, map_reduce=False), RunStore(entries)
    with client_for(whole) as cw, client_for(lazy) as cm:
        yield cw, cm, lazy, {e.label: e.id for e in entries}


def _post(c: TestClient, rid: str, body: dict[str, Any]) -> Any:
    return c.post(f"/api/v1/runs/{rid}/whatif", content=json.dumps(body).encode(),
                  headers={"content-type": "application/json"})


def test_the_rank_files_are_summarised_not_loaded(pair: tuple[TestClient, TestClient, RunStore, dict[str, str]]
                                                  ) -> None:
    _, cm, lazy, ids = pair
    assert cm.get(f"/api/v1/runs/{ids[DDP]}").status_code == 200
    res = lazy.get(ids[DDP])
    assert res.bundle is None and isinstance(res.models, LazyRanks) and res.models.loaded == ()
    assert lazy.get(ids[H100]).bundle is not None  # one file: analysed whole, as before
    for path in ("", "?rank=1", "/findings", "/info", "/memory?rank=1"):  # none of these needs events
        assert cm.get(f"/api/v1/runs/{ids[DDP]}{path}").status_code == 200
    assert res.models.loaded == () and res.models.loads == 0


@pytest.mark.parametrize("path", ["", "?rank=0", "?rank=1", "/findings", "/info", "/memory?rank=0", "/memory?rank=1"])
def test_precomputed_answers_are_byte_identical(pair: tuple[TestClient, TestClient, RunStore, dict[str, str]],
                                                path: str) -> None:
    cw, cm, _, ids = pair
    a, b = cw.get(f"/api/v1/runs/{ids[DDP]}{path}"), cm.get(f"/api/v1/runs/{ids[DDP]}{path}")
    assert a.status_code == b.status_code == 200 and a.content == b.content


def test_runs_list_whatif_and_diff_are_byte_identical(pair: tuple[TestClient, TestClient, RunStore, dict[str, str]]
                                                      ) -> None:
    cw, cm, lazy, ids = pair
    for body in ({"workers": 2, "overlap_comm": True}, {"host_in": ["^Optimizer=0.5"], "fused_optimizer": True}):
        a, b = _post(cw, ids[DDP], body), _post(cm, ids[DDP], body)
        assert a.status_code == b.status_code == 200 and a.content == b.content
        assert [r["rank"] for r in b.json()["ranks"]] == [0, 1]
    # a change to a GPU's work alone, asked of the CPU-only job: refused alike, in one line, by both paths
    a, b = (_post(c, ids[DDP], {"scale": ["gemm|conv=0.5"], "host_overhead": 0.5}) for c in (cw, cm))
    assert a.status_code == b.status_code == 422 and a.content == b.content and b"ran on the CPU alone" in a.content
    for base, new in ((DDP, H100), (H100, DDP), (DDP, DDP)):
        url = f"/api/v1/diff?base={ids[base]}&new={ids[new]}"
        a, b = cw.get(url), cm.get(url)
        assert a.status_code == b.status_code == 200 and a.content == b.content, (base, new)
    assert cw.get("/api/v1/runs").content == cm.get("/api/v1/runs").content
    assert lazy.get(ids[DDP]).models.loaded == ()  # what-if and diff load ranks without keeping them


def test_the_run_card_shows_the_jobs_step(pair: tuple[TestClient, TestClient, RunStore, dict[str, str]]) -> None:
    """A multi-rank run's card: the job's step (its verdict's, the arrivals': the slowest rank's mean window), not
    rank 0's own window."""
    for c in pair[:2]:
        doc = c.get(f"/api/v1/runs/{pair[3][DDP]}").json()
        card = next(r for r in c.get("/api/v1/runs").json()["runs"] if r["label"] == DDP)
        job = doc["verdicts"][0]
        assert job["rank"] is None and card["avg_step_ms"] == job["avg_step_ms"] == job["job_step_ms"]
        assert card["avg_step_ms"] == pytest.approx(doc["cluster"]["arrivals"]["job_step_ms"], abs=1e-6)
        # the slowest rank's mean window (rank 1's 44.387 ms), not rank 0's own (44.322)
        own = [r["overview"]["avg_step_ms"] for r in doc["ranks"]]
        assert card["avg_step_ms"] == pytest.approx(max(own), abs=1e-3) and card["avg_step_ms"] - own[0] > 0.05


def test_a_whatif_loads_one_rank_at_a_time_never_the_whole_model(
        pair: tuple[TestClient, TestClient, RunStore, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The job replay of a map-reduce run (fix a rank: the job's arrivals first) reads its ranks one by one
    from the cache: three passes over the ranks not held already, the whole-model loader never called."""
    cw, cm, lazy, ids = pair
    monkeypatch.setattr(lazy, "_loader", lambda path: pytest.fail(f"the whole model of {path} was loaded"))
    res = lazy.get(ids[DDP])
    before = res.models.loads
    held = set(res.models.loaded)
    body = {"fix_rank": [1], "workers": 3}
    a, b = _post(cw, ids[DDP], body), _post(cm, ids[DDP], body)
    assert a.status_code == b.status_code == 200 and a.content == b.content
    assert res.models.loads - before == 3 * len(set(res.ranks) - held)


def _by_track(window: dict[str, Any]) -> dict[str, Any]:
    """The window with its tracks named by (pid, tid) instead of their ids, and without event rows:
    a one-rank model numbers its tracks in another order than the whole model (string ids decide)."""
    name = {t["id"]: (t["pid"], t["tid"]) for t in window["tracks"]}
    ev = window["events"]
    events = None if ev is None else sorted(zip(*[[name[t] for t in ev["track"]] if k == "track" else ev[k]
                                                  for k in ev if k != "row"]))
    tracks = sorted(({**t, "id": None} for t in window["tracks"]), key=lambda t: (t["pid"], t["tid"]))
    queues = sorted(({**q, "track": name[q["track"]]} for q in window["counters"]["queue_length"]),
                    key=lambda q: q["track"])
    return {**window, "tracks": tracks, "events": events,
            "aggregate": sorted(({**a, "track": name[a["track"]]} for a in window["aggregate"] or []),
                                key=lambda a: a["track"]),
            "flows": sorted((name[f["from_track"]], name[f["to_track"]], f["from_ts_ns"], f["to_ts_ns"])
                            for f in window["flows"]),
            "counters": {**window["counters"], "queue_length": queues}}


@pytest.mark.parametrize("rank", [0, 1])
def test_timeline_windows_are_the_whole_models(pair: tuple[TestClient, TestClient, RunStore, dict[str, str]],
                                               rank: int) -> None:
    """The same events, aggregates, flows and counters; track ids and rows are the ones the whole model
    uses for this rank (the same sets, offset past the earlier rank files), though assigned in another
    order within the rank; tracks matched by name."""
    cw, cm, lazy, ids = pair
    step = cw.get(f"/api/v1/runs/{ids[DDP]}/info").json()["ranks"][rank]["steps"][0]
    for query in ("max_items=100", "max_items=20000", f"start_ns={step['start_ns']}&end_ns={step['end_ns']}"):
        url = f"/api/v1/runs/{ids[DDP]}/timeline?rank={rank}&{query}"
        a, b = cw.get(url).json(), cm.get(url).json()
        assert _by_track(a) == _by_track(b)
        assert {t["id"] for t in a["tracks"]} == {t["id"] for t in b["tracks"]}
        if query == "max_items=20000":  # the whole rank, event by event: the same rows
            assert a["mode"] == "events" and a["event_count"] > 100
            assert sorted(a["events"]["row"]) == sorted(b["events"]["row"])
    assert rank in lazy.get(ids[DDP]).models.loaded


def test_track_ids_and_rows_do_not_collide_across_ranks(pair: tuple[TestClient, TestClient, RunStore,
                                                                    dict[str, str]]) -> None:
    _, cm, _, ids = pair
    w = [cm.get(f"/api/v1/runs/{ids[DDP]}/timeline?rank={r}&max_items=20000").json() for r in (0, 1)]
    assert w[0]["mode"] == w[1]["mode"] == "events"
    assert not {t["id"] for t in w[0]["tracks"]} & {t["id"] for t in w[1]["tracks"]}
    assert max(w[0]["events"]["row"]) < min(w[1]["events"]["row"])


def test_shift_window_by_hand() -> None:
    window = {"tracks": [{"id": 0}, {"id": 1}], "events": {"row": [0, 4], "track": [1, 0]},
              "aggregate": None, "flows": [{"from_row": 4, "to_row": 0, "from_track": 0, "to_track": 1}],
              "counters": {"gpu_util_pct": [], "queue_length": [{"track": 1}]}}
    out = shift_window(window, 100, 10)
    assert [t["id"] for t in out["tracks"]] == [10, 11] and out["events"] == {"row": [100, 104], "track": [11, 10]}
    assert out["flows"] == [{"from_row": 104, "to_row": 100, "from_track": 10, "to_track": 11}]
    assert out["counters"]["queue_length"] == [{"track": 11}]


@pytest.mark.skipif(not DLRM.is_dir(), reason=f"real traces not found at {SHARED_TRACES}")
def test_eight_ranks_keep_the_last_two_loaded() -> None:
    store = RunStore(discover_runs(DLRM))
    (entry,) = store.entries
    res = store.get(entry.id)
    whole = RunStore(discover_runs(DLRM), map_reduce=False).get(entry.id)
    assert whole.bundle is not None and res.bundle is None
    assert (res.doc, res.rank_doc(5), res.findings, res.info, res.memory) == \
        (whole.doc, whole.rank_doc(5), whole.findings, whole.info, whole.memory)
    assert res.summary == whole.summary
    # the run card's step is the job's, the number the job verdict states (it showed rank 0's 14.5 ms)
    job = json.loads(res.findings)["verdicts"][0]
    assert job["rank"] is None and res.summary["avg_step_ms"] == job["avg_step_ms"] == pytest.approx(18.711)
    assert isinstance(res.models, LazyRanks) and res.ranks == tuple(range(8))
    for i, rank in enumerate((0, 1, 2, 3, 3, 2)):
        first, last = res.extents[rank]
        store.window(entry.id, rank, first, last, 200 + i)  # not a window already answered
    assert res.models.loaded == (3, 2) and len(res.models.loaded) == LOADED_RANKS and res.models.loads == 4
    wide = RunStore(discover_runs(DLRM), loaded_ranks=8)  # --loaded-ranks 8: all ranks on one axis stay
    for i, rank in enumerate((*range(8), *range(8))):
        first, last = res.extents[rank]
        wide.window(entry.id, rank, first, last, 300 + i)
    models = wide.get(entry.id).models
    assert isinstance(models, LazyRanks) and models.loaded == tuple(range(8)) and models.loads == 8
    info = json.loads(res.info)["ranks"]
    assert [r["rank"] for r in info] == list(range(8)) and all(r["steps"] for r in info)


def test_a_run_map_reduce_refuses_is_served_whole(tmp_path: Path) -> None:
    """Two rank files that claim the same rank: the map-reduce path refuses them, the whole model
    renames one (1000 + its index), as ``stepscope analyze --no-map-reduce`` does."""
    from tests.unit.server.served import DATA

    (src,) = sorted((DATA / DDP).glob("worker0.*"))
    run = tmp_path / "twins"
    run.mkdir()
    for name in ("a", "b"):
        (run / f"{name}.{src.name}").write_bytes(src.read_bytes())
    store = RunStore(discover_runs(tmp_path))
    (entry,) = store.entries
    res = store.get(entry.id)
    assert res.bundle is not None and len(res.ranks) == 2
    with pytest.raises(Exception, match="claim the same rank"):
        RunStore(discover_runs(tmp_path), map_reduce=True).get(entry.id)


def _without_ids(obj: Any) -> Any:
    """``obj`` without its event rows and track ids (numbered in another order within a rank)."""
    if isinstance(obj, dict):
        return {k: _without_ids(v) for k, v in obj.items() if k not in ("row", "track")}
    if isinstance(obj, list):
        return [_without_ids(v) for v in obj]
    return obj


def test_event_details_and_search_on_a_map_reduce_run(pair: tuple[TestClient, TestClient, RunStore,
                                                                  dict[str, str]]) -> None:
    """Rank 1 (offset past rank 0's rows): the search finds the same events as the whole model's;
    each found row's details are the whole model's event, its rows those of the map-reduce windows."""
    cw, cm, _, ids = pair
    url = f"/api/v1/runs/{ids[DDP]}/search?rank=1&q=aten::&limit=20"
    a, b = cw.get(url).json(), cm.get(url).json()
    assert b["total"] > 20 and _without_ids(a) == _without_ids(b)
    window = cm.get(f"/api/v1/runs/{ids[DDP]}/timeline?rank=1&max_items=20000").json()
    at = dict(zip(window["events"]["row"], zip(window["events"]["ts_ns"], window["events"]["name"])))
    for ra, rb in list(zip(a["matches"]["row"], b["matches"]["row"]))[:5]:
        da = cw.get(f"/api/v1/runs/{ids[DDP]}/event?rank=1&row={ra}").json()
        db = cm.get(f"/api/v1/runs/{ids[DDP]}/event?rank=1&row={rb}").json()
        assert db["row"] == rb and at[rb] == (db["ts_ns"], db["name"]) and _without_ids(da) == _without_ids(db)
        assert all(p["row"] in at for p in db["parents"])  # refs numbered as the windows are
    assert min(window["events"]["row"]) > 0
    for c in (cw, cm):  # row 0 is rank 0's
        r = c.get(f"/api/v1/runs/{ids[DDP]}/event?rank=1&row=0")
        assert r.status_code == 404 and "row 0 is not an event on rank 1" in r.json()["error"]
