"""The Bar: a trace cut at 50 % recovers ≥ 99 % of the complete events before the cut, and the
loss is reported (a ``truncated-file`` diagnostic with the lost bytes).

The expected events are counted independently of stepscope's scanner: the untruncated file is
parsed with the stdlib ``json`` (``tests.corpus.complete_events``), and an event counts when its
serialized end lies before the cut offset.
"""

from __future__ import annotations

import functools
import gzip
import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder, kargs
from tests.corpus import (
    BASE_TRACE,
    SHARED_TRACES,
    TRUNCATION_POINTS,
    complete_events,
    real_bytes,
    table_of,
)

NW0 = "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
TABLES = ("events", "memory", "flows", "counters")
LOST_BYTES = re.compile(r"(\d+) bytes")


@functools.cache
def _oracle(rel: str) -> list[tuple[Any, int]]:
    """complete_events of a real trace, computed once per session (stdlib json is slow on 35 MB)."""
    return complete_events(real_bytes(rel))


def _real(rel: str) -> bytes:
    if not (SHARED_TRACES / rel).is_file():
        pytest.skip(f"real trace {rel} not found under {SHARED_TRACES}")
    return real_bytes(rel)


def _expected(spans: list[tuple[Any, int]], upto: int) -> tuple[Counter[str], int]:
    """Rows per stepscope table of the events that end before ``upto``, and the last such end."""
    before = [(e, end) for e, end in spans if end <= upto]
    rows = Counter(t for e, _ in before if (t := table_of(e)) is not None)
    return rows, (before[-1][1] if before else 0)


def _recovered(trace: Trace) -> Counter[str]:
    return Counter({t: len(getattr(trace, t)) for t in TABLES})


def _truncation_diag(trace: Trace) -> tuple[int, str]:
    found = [d for d in trace.diagnostics if d.name == "truncated-file"]
    assert len(found) == 1, f"expected one truncated-file diagnostic, got {trace.diagnostics}"
    m = LOST_BYTES.search(found[0].example)
    assert m is not None, f"the truncated-file diagnostic does not report the lost bytes: {found[0].example}"
    return int(m.group(1)), found[0].severity


def _check(trace: Trace, expected: Counter[str], data_upto: bytes, last_end: int) -> None:
    got = _recovered(trace)
    total_exp, total_got = sum(expected.values()), sum(got.values())
    assert total_exp > 0
    assert total_got >= 0.99 * total_exp, f"recovered {total_got} of {total_exp} complete events: {got} vs {expected}"
    for t in TABLES:  # per table too, and nothing invented
        assert expected[t] * 0.99 <= got[t] <= expected[t], f"{t}: recovered {got[t]}, expected {expected[t]}"
    lost, severity = _truncation_diag(trace)
    tail = data_upto[last_end:]
    assert len(tail.strip()) <= lost <= len(tail), (
        f"reported {lost} lost bytes; the bytes after the last complete event are {len(tail)} "
        f"({len(tail.strip())} without whitespace)")
    assert severity in ("error", "warning")


def test_nw0_cut_at_half_recovers_99pct(tmp_path: Path) -> None:
    data = _real(NW0)
    spans = _oracle(NW0)
    assert len(spans) == 75_718  # SOURCES.md: the nw0 trace has 75,718 events
    cut = len(data) // 2
    path = tmp_path / "nw0_cut50.json"
    path.write_bytes(data[:cut])
    expected, last_end = _expected(spans, cut)
    trace = stepscope.load(path, use_cache=False)
    _check(trace, expected, data[:cut], last_end)
    assert len(trace.ranks[0].devices) == 4  # the header (deviceProperties) survives the cut


def test_nw0_gzip_stream_cut_at_half(tmp_path: Path) -> None:
    """The compressed file cut short: every event of the decompressible prefix is kept."""
    if not (SHARED_TRACES / NW0).is_file():
        pytest.skip(f"real trace {NW0} not found under {SHARED_TRACES}")
    gz = (SHARED_TRACES / NW0).read_bytes()
    data = gzip.decompress(gz)
    spans = _oracle(NW0)
    cut_gz = gz[: len(gz) // 2]
    prefix = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(cut_gz)  # what is recoverable at all
    assert data.startswith(prefix)
    path = tmp_path / "nw0_cut50.json.gz"
    path.write_bytes(cut_gz)
    expected, last_end = _expected(spans, len(prefix))
    trace = stepscope.load(path, use_cache=False)
    _check(trace, expected, prefix, last_end)


def _micro_trace() -> TraceBuilder:
    b = TraceBuilder()
    ts = 0.0
    for step in range(1, 21):
        b.step(step, ts, 1000)
        for i in range(20):
            t0 = ts + 10 + i * 45
            b.op("aten::linear", t0, 40, **kargs({"External id": step * 100 + i}))
            b.launch_kernel(f"gemm_{i}", t0 + 5, 10, t0 + 20, 30)
            b.memory(t0 + 2, 4096, total_allocated=4096 * (i + 1), total_reserved=1 << 20)
            b.flow(step * 100 + i, t0 + 5, "s")
            b.flow(step * 100 + i, t0 + 20, "f", pid=0, tid=7)
        b.counter("gpu_util", ts, value=float(step))
        ts += 1000
    return b


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_micro_trace_cut_at_half(tmp_path: Path, gz: bool) -> None:
    data = _micro_trace().write(tmp_path / "full.json").read_bytes()
    spans = complete_events(data)
    cut = len(data) // 2
    expected, last_end = _expected(spans, cut)
    assert expected["memory"] and expected["flows"] and expected["counters"]
    path = tmp_path / ("cut.json.gz" if gz else "cut.json")
    path.write_bytes(gzip.compress(data[:cut]) if gz else data[:cut])
    _check(stepscope.load(path, use_cache=False), expected, data[:cut], last_end)


@pytest.mark.parametrize("frac", TRUNCATION_POINTS, ids=[f"{f:.1%}" for f in TRUNCATION_POINTS])
def test_real_trace_cut_anywhere(tmp_path: Path, frac: float) -> None:
    """DLRM rank 0 cut at 1 %, 10 %, 50 %, 90 %, 99.9 %: the same bar at every point."""
    data = _real(BASE_TRACE)
    spans = _oracle(BASE_TRACE)
    cut = int(len(data) * frac)
    path = tmp_path / "cut.json"
    path.write_bytes(data[:cut])
    expected, last_end = _expected(spans, cut)
    _check(stepscope.load(path, use_cache=False), expected, data[:cut], last_end)


def test_complete_file_reports_no_truncation(tmp_path: Path) -> None:
    trace = _micro_trace().load(tmp_path)
    assert not [d for d in trace.diagnostics if d.name == "truncated-file"]
    assert len(trace.events) == 20 * (1 + 20 * 3)  # steps, ops, runtime calls, kernels
