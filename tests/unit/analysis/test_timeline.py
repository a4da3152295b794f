"""Timeline windows on hand-made traces: every number below is checkable by eye (times in µs → ×1000 ns)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import TraceBuilder

from stepscope.analysis import timeline as tl
from stepscope.analysis._memo import Memo
from stepscope.analysis.timeline import timeline_window
from stepscope.analysis.timeline_index import bucket_edges, bucket_of, rank_index
from stepscope.model.trace import Trace

US = 1000


def _nested(tmp_path: Path) -> Trace:
    """A thread with a long op and children; one launch whose kernel runs later; a GPU annotation."""
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.op("long", ts=0, dur=100)
    b.op("a", ts=10, dur=5)
    b.op("b", ts=20, dur=10)
    b.op("c", ts=40, dur=10)
    b.op("d", ts=60, dur=5)
    b.launch_kernel("k1", launch_ts=22, launch_dur=2, ts=30, dur=20)
    b.gpu("annot", ts=0, dur=100, cat="gpu_user_annotation", stream=9)
    b.gpu("k9a", ts=10, dur=10, stream=9)
    b.gpu("k9b", ts=50, dur=10, stream=9)
    return b.load(tmp_path)


def _names(w: tl.TimelineWindow) -> set[str]:
    assert w.events is not None
    return set(w.to_dict()["events"]["name"])


def test_window_keeps_events_crossing_its_edges(tmp_path: Path) -> None:
    trace = _nested(tmp_path)
    w = timeline_window(trace, 0, 25 * US, 45 * US)
    assert w.mode == "events"
    # step and "long" began before the window; b crosses its start, c its end; a and d lie outside
    assert _names(w) == {"ProfilerStep#1", "long", "b", "c", "k1", "annot"}
    assert w.event_count == 6
    d = w.to_dict()
    # the step breakdown's window (one length per step in every view): the first step starts after
    # the GPU work before its own (k9a, not launched in it, ends at 20)
    assert d["steps"] == [{"step": 1, "start_ns": 20 * US, "end_ns": 100 * US, "host_end_ns": 100 * US}]


def test_long_event_found_among_overlapping_gpu_events(tmp_path: Path) -> None:
    trace = _nested(tmp_path)
    w = timeline_window(trace, 0, 70 * US, 80 * US)  # only the annotation (0-100) covers it on stream 9
    assert _names(w) == {"ProfilerStep#1", "long", "annot"}
    w = timeline_window(trace, 0, 55 * US, 56 * US)
    assert _names(w) == {"ProfilerStep#1", "long", "annot", "k9b"}


def test_flow_kept_when_only_the_kernel_is_in_the_window(tmp_path: Path) -> None:
    trace = _nested(tmp_path)
    w = timeline_window(trace, 0, 35 * US, 38 * US)  # k1 runs 30-50; its launch (22-24) is outside
    flows = w.to_dict()["flows"]
    ev = trace.events
    k1 = int(np.flatnonzero(trace.strings.decode(ev["name"]) == "k1")[0])
    rt = int(ev["launch"][k1])
    assert flows == [{"from_row": rt, "to_row": k1, "from_track": int(ev["track"][rt]),
                      "to_track": int(ev["track"][k1]), "from_ts_ns": 22 * US, "to_ts_ns": 30 * US}]


def test_window_outside_the_trace_is_empty(tmp_path: Path) -> None:
    trace = _nested(tmp_path)
    w = timeline_window(trace, 0, 500 * US, 600 * US)
    assert w.mode == "events" and w.event_count == 0 and w.to_dict()["events"]["row"] == []
    with pytest.raises(ValueError):
        timeline_window(trace, 0, 10, 10)


def _stream(tmp_path: Path) -> Trace:
    """Kernels on one stream: [0, 10), [20, 30) and [32, 37) µs."""
    b = TraceBuilder()
    b.gpu("g0", ts=0, dur=10)
    b.gpu("g1", ts=20, dur=10)
    b.gpu("g2", ts=32, dur=5)
    return b.load(tmp_path)


@pytest.mark.parametrize("sampled", [False, True])
def test_aggregate_above_max_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sampled: bool) -> None:
    if sampled:  # the binary-search path used for very large windows must give the same cells here
        monkeypatch.setattr(tl, "SAMPLE_ABOVE", 0)
    trace = _stream(tmp_path)
    w = timeline_window(trace, 0, 0, 40 * US, max_items=2, buckets=4)
    assert w.mode == "aggregate" and w.event_count == 3
    agg = w.to_dict()["aggregate"]
    assert len(agg) == 1
    cells = agg[0]
    assert cells["busy_frac"] == [1.0, 0.0, 1.0, 0.5]
    assert cells["count"] == [1, 0, 1, 1]
    assert cells["kind"] == ["kernel", None, "kernel", "kernel"]
    assert cells["name"] == ["g0", None, "g1", "g2"]
    util = w.to_dict()["counters"]["gpu_util_pct"]
    assert util == [{"device": 0, "values": [100.0, 0.0, 100.0, 50.0]}]


def test_aggregate_dominance_is_by_self_time(tmp_path: Path) -> None:
    """A parent covering the bucket loses to the child that holds most of its time."""
    b = TraceBuilder()
    b.op("parent", ts=0, dur=10)
    b.op("child", ts=1, dur=8)
    b.op("x", ts=10, dur=10)
    trace = b.load(tmp_path)
    w = timeline_window(trace, 0, 0, 20 * US, max_items=1, buckets=2)
    cells = w.to_dict()["aggregate"][0]
    assert cells["name"] == ["child", "x"] and cells["count"] == [2, 1] and cells["busy_frac"] == [1.0, 1.0]


def test_queue_length_two_overlapping_launches(tmp_path: Path) -> None:
    """Two launches at t=0 (two threads): queue 2 until k1 ends at 20, 1 until k2 ends at 30, then 0."""
    b = TraceBuilder()
    b.launch_kernel("k1", launch_ts=0, launch_dur=2, ts=10, dur=10, tid=100)
    b.launch_kernel("k2", launch_ts=0, launch_dur=2, ts=20, dur=10, tid=101)
    trace = b.load(tmp_path)
    ix = rank_index(trace, 0)
    assert len(ix.queue) == 1
    assert ix.queue[0].ts_ns.tolist() == [0, 20 * US, 30 * US] and ix.queue[0].value.tolist() == [2, 1, 0]
    w = timeline_window(trace, 0, -10 * US, 40 * US, buckets=5)
    q = w.to_dict()["counters"]["queue_length"]
    assert [x["max"] for x in q] == [[0, 2, 2, 1, 0]]
    assert [x["mean"] for x in q] == [[0.0, 2.0, 2.0, 1.0, 0.0]]
    w = timeline_window(trace, 0, 15 * US, 25 * US, buckets=1)  # half at 2, half at 1
    q = w.to_dict()["counters"]["queue_length"][0]
    assert q["max"] == [2] and q["mean"] == [1.5]


def test_to_dict_is_plain_json_with_decoded_names(tmp_path: Path) -> None:
    trace = _nested(tmp_path)
    d = timeline_window(trace, 0, 0, 100 * US).to_dict()
    back = json.loads(json.dumps(d, allow_nan=False))
    assert back == d
    assert set(d) == {"rank", "start_ns", "end_ns", "mode", "event_count", "max_items", "bucket_edges_ns",
                      "tracks", "events", "aggregate", "steps", "flows", "counters"}
    kinds = {t["kind"] for t in d["tracks"]}
    assert kinds == {"cpu_thread", "gpu_stream"}
    gpu = [t for t in d["tracks"] if t["kind"] == "gpu_stream"]
    assert [t["label"] for t in gpu] == ["GPU 0 · stream 7", "GPU 0 · stream 9"]
    assert d["tracks"][0]["kind"] == "cpu_thread" and d["tracks"][0]["max_depth"] == 3
    assert "kernel" in d["events"]["kind"] and "k1" in d["events"]["name"]


def test_index_is_built_once_per_rank_and_bundle(tmp_path: Path) -> None:
    trace = _nested(tmp_path)
    with Memo().active():  # the server's windows run inside their bundle's memo
        assert rank_index(trace, 0) is rank_index(trace, 0)


def test_bucket_of_matches_a_binary_search() -> None:
    edges = bucket_edges(7, 1_000_003, 333)
    t = np.arange(7, 1_000_003, 97, dtype=np.int64)
    assert np.array_equal(bucket_of(edges, t), np.searchsorted(edges, t, side="right") - 1)


def test_gpu_annotation_is_a_label_not_work(tmp_path: Path) -> None:
    """Stream 9 holds a 0-100 µs annotation over kernels at 10-20 and 50-60: zoomed out, the stream is
    20 % busy (not 100 %) and its dominant kind is the kernels'."""
    trace = _nested(tmp_path)
    w = timeline_window(trace, 0, 0, 100 * US, max_items=1, buckets=1).to_dict()
    stream9 = next(t["id"] for t in w["tracks"] if t["stream"] == 9)
    agg = next(a for a in w["aggregate"] if a["track"] == stream9)
    assert agg["busy_frac"] == [pytest.approx(0.2)]
    assert agg["kind"] == ["kernel"]


WIDE = [(-(1 << 62), 1 << 62), (0, 1 << 62), (-(1 << 62), 1 << 20), (-(1 << 61), 1 << 61), (-(10 ** 17), 10 ** 17)]


@pytest.mark.parametrize(("a", "b"), WIDE)
@pytest.mark.parametrize("n", [1, 2, 3, 500])
def test_bucket_edges_are_exact_over_the_whole_int64_window_range(a: int, b: int, n: int) -> None:
    """``i * (b - a)`` passes 2^63 for a window within the server's ±2^62 (OverflowError, or wrapped
    edges and negative busy fractions)."""
    edges = bucket_edges(a, b, n)
    assert edges.tolist() == [a + i * (b - a) // n for i in range(n + 1)]


@pytest.mark.parametrize(("a", "b"), WIDE)
def test_a_huge_window_keeps_every_busy_nanosecond(tmp_path: Path, a: int, b: int) -> None:
    """The stream's 25 µs of kernels (0-10, 20-30, 32-37) fall in one or two of 500 buckets of a
    window up to 2^63 ns wide: busy fractions in [0, 1] whose busy time adds up to 25 µs."""
    trace = _stream(tmp_path)
    w = timeline_window(trace, 0, a, b, max_items=1)
    d = w.to_dict()
    assert d["start_ns"] == a and d["end_ns"] == b
    widths = np.diff(np.array(d["bucket_edges_ns"], dtype=object))
    assert min(widths) > 0
    for cells in d["aggregate"] or []:
        assert all(0.0 <= f <= 1.0 for f in cells["busy_frac"])
    busy = tl._busy(rank_index(trace, 0), w.edges_ns)  # unrounded
    assert float((busy[0] * widths.astype(float)).sum()) == pytest.approx(25 * US, rel=1e-6)
    util = d["counters"]["gpu_util_pct"][0]["values"]
    assert all(0.0 <= u <= 100.0 for u in util)
