"""The timeline's event-details and search routes: answers equal the engine's, bad queries are 4xx."""

from __future__ import annotations

import pytest

from stepscope.analysis.timeline_event import event_details, search_events
from stepscope.server.store import RunStore
from tests.unit.server.served import TestClient


def test_event_and_search_equal_the_engine(client: TestClient, ids: dict[str, str], store: RunStore) -> None:
    rid = ids["h100/base"]
    found = client.get(f"/api/v1/runs/{rid}/search?rank=0&q=Aten::MM&limit=5").json()
    trace = store.get(rid).trace
    assert found == search_events(trace, 0, "Aten::MM", limit=5)
    assert found["total"] > 5 and found["truncated"] and len(found["matches"]["row"]) == 5
    row = found["matches"]["row"][0]
    det = client.get(f"/api/v1/runs/{rid}/event?rank=0&row={row}").json()
    assert det == event_details(trace, 0, row)
    assert det["name"] == "aten::mm" and det["kernel_count"] >= 1 and det["input_dims"]
    kernel = client.get(f"/api/v1/runs/{rid}/event?rank=0&row={det['kernels'][0]['row']}").json()
    assert kernel["op"]["row"] == row and kernel["launch"] is not None
    after = found["matches"]["ts_ns"][2]
    page = client.get(f"/api/v1/runs/{rid}/search?rank=0&q=aten::mm&after_ns={after}&limit=5").json()
    assert page["matches"]["row"][:3] == found["matches"]["row"][2:5] and page["skipped"] == 2
    back = client.get(f"/api/v1/runs/{rid}/search?rank=0&q=aten::mm&before_ns={after}&limit=5").json()
    assert back["matches"]["row"] == found["matches"]["row"][:2] and back["skipped"] == 0


@pytest.mark.parametrize(("path", "status"), [
    ("event?rank=0", 400), ("event?rank=0&row=-1", 400), ("event?rank=0&row=abc", 400),
    ("event?rank=0&row=2000000000", 404), ("event?rank=7&row=1", 404),
    ("search?rank=0", 400), ("search?rank=0&q=%20", 400), ("search?rank=0&q=mm&limit=0", 400),
    ("search?rank=0&q=mm&limit=999999", 400), ("search?rank=0&q=mm&after_ns=x", 400),
    ("search?rank=0&q=mm&bogus=1", 400), ("search?rank=0&q=mm&after_ns=1&before_ns=2", 400),
    ("search?rank=0&q=" + "a" * 80, 400)])
def test_bad_event_and_search_queries(client: TestClient, ids: dict[str, str], path: str, status: int) -> None:
    r = client.get(f"/api/v1/runs/{ids['h100/base']}/{path}")
    assert r.status_code == status, r.text
    assert set(r.json()) == {"error", "status"}
