"""Allocator snapshots served: discovered safely, summarised on the server, the curve by window, the peak paged."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from stepscope.server.discover import discover_runs, is_snapshot
from stepscope.server.store import RunStore
from tests.snapshot_builder import sawtooth, small, write
from tests.unit.server.served import client_for

Served = tuple[TestClient, dict[str, str]]


class Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture()
def served(tmp_path: Path) -> Served:
    write(tmp_path / "small.pickle", small())
    write(tmp_path / "saw.pickle", sawtooth())
    (tmp_path / "evil.pickle").write_bytes(pickle.dumps({"segments": Evil(tmp_path / "pwned")}))
    (tmp_path / "evil_first.pickle").write_bytes(pickle.dumps(Evil(tmp_path / "pwned")))
    (tmp_path / "list.pickle").write_bytes(pickle.dumps([1, 2]))
    (tmp_path / "other.pickle").write_bytes(pickle.dumps({"weights": [1.0]}))
    (tmp_path / "junk.pickle").write_bytes(b"\x80\x04not a pickle at all")
    runs = discover_runs(tmp_path)
    client = client_for(RunStore(runs))
    return client, {r.label: r.id for r in runs}


def test_only_snapshots_are_runs_and_nothing_is_unpickled(tmp_path: Path, served: Served) -> None:
    client, ids = served
    assert sorted(ids) == ["saw.pickle", "small.pickle"]
    listing = {r["label"]: r for r in client.get("/api/v1/runs").json()["runs"]}
    assert {r["kind"] for r in listing.values()} == {"snapshot"}
    assert not (tmp_path / "pwned").exists()
    assert not is_snapshot(tmp_path / "evil.pickle")  # a global right after the key: refused
    assert client.get(f"/api/v1/runs/{ids['small.pickle']}").status_code == 404  # no trace document


def test_summary_is_what_memory_json_prints_with_the_hand_computed_peak(served: Served) -> None:
    client, ids = served
    doc = client.get(f"/api/v1/runs/{ids['small.pickle']}/snapshot").json()
    h = doc["history"][0]
    assert (h["peak_live_bytes"], h["peak_ms"], h["duration_ms"]) == (1000, 40.0, 60.0)
    assert {s["site"]: s["bytes"] for s in h["live_at_peak"]} == {"/src/a.py:10 a": 700, "/src/b.py:10 b": 300}
    assert doc["source"] == "small.pickle"  # the label, not the server's path
    assert doc["segments"]["reserved_bytes"] == 4096 and doc["largest_alloc_bytes"] == 700
    assert doc["devices"] == [{"device": 0, "live_at_peak_allocations": 2}]
    listing = {r["label"]: r for r in client.get("/api/v1/runs").json()["runs"]}
    assert listing["small.pickle"]["peak_live_bytes"] == 1000 and listing["small.pickle"]["state"] == "ready"


def test_allocations_at_the_peak_are_paged_largest_first_with_stacks(served: Served) -> None:
    client, ids = served
    rid = ids["saw.pickle"]
    first = client.get(f"/api/v1/runs/{rid}/snapshot/allocations?limit=2").json()
    assert (first["total"], first["total_bytes"]) == (3, (1 << 20) + 8 * 1024)
    assert [(a["bytes"], a["site"], a["time_ms"]) for a in first["allocations"]] == \
        [(1 << 20, "/src/big.py:10 big", 700.2), (7 * 1024, "/src/step.py:10 step", 699.1)]
    assert first["allocations"][0]["stack"] == ["/venv/site-packages/torch/x.py:1 inner", "/src/big.py:10 big"]
    rest = client.get(f"/api/v1/runs/{rid}/snapshot/allocations?offset=2&limit=2").json()
    assert [(a["bytes"], a["time_ms"]) for a in rest["allocations"]] == [(1024, 700.1)]
    assert client.get(f"/api/v1/runs/{rid}/snapshot/allocations?limit=999").status_code == 400


def test_the_curve_window_keeps_the_peak_at_every_level_of_detail(served: Served) -> None:
    client, ids = served
    rid = ids["saw.pickle"]
    whole = client.get(f"/api/v1/runs/{rid}/snapshot/curve?points=100").json()
    assert len(whole["time_ms"]) == 100 and whole["points_in_window"] == 2 * 1500 - 1 + 2
    assert max(whole["live_bytes"]) == (1 << 20) + 8 * 1024
    fine = client.get(f"/api/v1/runs/{rid}/snapshot/curve?points=100&start_ms=699&end_ms=702").json()
    # 699.1 699.5 700.1 700.2 700.5 701.0 701.1 701.5: every entry, exact
    assert fine["time_ms"] == [699.1, 699.5, 700.1, 700.2, 700.5, 701.0, 701.1, 701.5]
    assert fine["live_bytes"] == [13 * 1024, 7 * 1024, 8 * 1024, (1 << 20) + 8 * 1024, (1 << 20) + 1024, 1024,
                                  3 * 1024, 2 * 1024]
    assert fine["live_before_bytes"] == 6 * 1024
    bad = {"points=1": 400, "points=9999": 400, "start_ms=5&end_ms=1": 400, "start_ms=nan": 400,
           "device=1": 404, "colour=red": 400}
    for q, status in bad.items():
        assert client.get(f"/api/v1/runs/{rid}/snapshot/curve?{q}").status_code == status, q


def test_a_trace_run_has_no_snapshot_route(tmp_path: Path) -> None:
    from tests.builders import TraceBuilder

    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.write(tmp_path / "t.pt.trace.json")
    runs = discover_runs(tmp_path)
    client = client_for(RunStore(runs))
    assert client.get(f"/api/v1/runs/{runs[0].id}/snapshot").status_code == 404


def test_one_snapshot_file_is_served_and_another_pickle_is_one_error(tmp_path: Path) -> None:
    from stepscope.errors import NoTraceFoundError

    (run,) = discover_runs(write(tmp_path / "one.pickle", small()))
    assert (run.kind, run.label) == ("snapshot", "one.pickle")
    doc = client_for(RunStore([run])).get(f"/api/v1/runs/{run.id}/snapshot").json()
    assert doc["history"][0]["peak_live_bytes"] == 1000
    (tmp_path / "weights.pickle").write_bytes(pickle.dumps({"weights": [1.0]}))
    with pytest.raises(NoTraceFoundError, match="not an allocator snapshot"):
        discover_runs(tmp_path / "weights.pickle")
