"""Counter events and splicing them into an exported trace, without torch."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.collect.sampler import Sample, SystemSampler, counter_events
from stepscope.collect.trace_file import TraceWriter, splice_events, trace_base_ns

EXPORTED = (b'{"schemaVersion": 1, "baseTimeNanoseconds": 1000000000,\n"traceEvents": [\n'
            b'{"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 5.0, "dur": 2.0}\n],\n'
            b'"traceName": "/tmp/x/.w.1.pt.trace.json.tmp"}')


def test_counter_events_are_chrome_counters_relative_to_base() -> None:
    samples = [Sample(1_000_005_000, {"cpu_pct": 50.0, "rss_bytes": 1024.0})]
    events = counter_events(samples, pid=7, base_ns=1_000_000_000)
    assert events == [
        {"ph": "C", "cat": "stepscope", "name": "stepscope.cpu_pct", "pid": 7, "tid": 0,
         "ts": 5.0, "args": {"value": 50.0}},
        {"ph": "C", "cat": "stepscope", "name": "stepscope.rss_bytes", "pid": 7, "tid": 0,
         "ts": 5.0, "args": {"value": 1024.0}},
    ]


def test_splice_keeps_valid_json_and_existing_events() -> None:
    events = counter_events([Sample(1_000_002_000, {"cpu_pct": 1.5})], 1, trace_base_ns(EXPORTED))
    doc = json.loads(splice_events(EXPORTED, events))
    names = [e["name"] for e in doc["traceEvents"]]
    assert names == ["stepscope.cpu_pct", "ProfilerStep#1"]
    assert doc["traceEvents"][0]["ts"] == 2.0


def test_splice_into_empty_array_and_errors() -> None:
    empty = b'{"traceEvents": [ ]}'
    doc = json.loads(splice_events(empty, [{"ph": "C", "name": "a", "ts": 0, "args": {"value": 1}}]))
    assert len(doc["traceEvents"]) == 1
    assert splice_events(empty, []) == empty
    with pytest.raises(ValueError):
        splice_events(b'{"events": []}', [{"ph": "C"}])
    assert trace_base_ns(b'{"traceEvents": []}') == 0


class FakeProfiler:
    """Stands in for torch.profiler.profile: exports a fixed trace."""

    def export_chrome_trace(self, path: str) -> None:
        Path(path).write_bytes(EXPORTED.replace(b"/tmp/x/.w.1.pt.trace.json.tmp", path.encode()))


def test_writer_uses_tensorboard_layout_and_adds_counters(tmp_path: Path) -> None:
    sampler = SystemSampler(interval_s=0.05)
    writer = TraceWriter(tmp_path, worker_name="worker0", sampler=sampler)
    writer(FakeProfiler())
    (path,) = writer.files
    assert path.name.startswith("worker0.") and path.name.endswith(".pt.trace.json.gz")
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind
    doc: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    assert doc["traceName"] == str(path)
    counters = {e["name"] for e in doc["traceEvents"] if e["ph"] == "C"}
    pytest.importorskip("psutil")
    assert {"stepscope.cpu_pct", "stepscope.rss_bytes"} <= counters


def test_sampler_thread_collects_and_drain_filters(tmp_path: Path) -> None:
    pytest.importorskip("psutil")
    sampler = SystemSampler(interval_s=0.01)
    sampler.start()
    try:
        sampler.sample_now()
        import time
        time.sleep(0.05)
    finally:
        sampler.stop()
    samples = sampler.drain()
    assert len(samples) >= 2
    assert all(s.values["rss_bytes"] > 0 for s in samples)
    assert sampler.drain() == []  # drained
    with pytest.raises(ValueError):
        SystemSampler(interval_s=0)
