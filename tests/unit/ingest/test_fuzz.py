"""Fuzzing (SPEC §11): random mutations of a small valid trace (byte flips, cuts, inserted junk,
plain or gzip) never raise anything but a StepscopeError, and never hang."""

from __future__ import annotations

import contextlib
import gzip
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stepscope
from stepscope.errors import StepscopeError
from tests.builders import TraceBuilder, kargs

MAX_SECONDS = 3.0


def _seed() -> bytes:
    b = TraceBuilder(rank=0, world_size=1)
    b.thread_name("main")
    b.step(1, 0, 500)
    b.op("aten::linear", 10, 200, **kargs({"External id": 1, "Input Dims": [[8, 16], [16, 16]]}))
    b.op("aten::mm", 20, 100)
    b.launch_kernel("volta_sgemm_128x64_nn", launch_ts=30, launch_dur=10, ts=60, dur=300,
                    grid=[8, 1, 1], block=[256, 1, 1], ext_id=1)
    b.launch_kernel("Memcpy HtoD (Pageable -> Device)", launch_ts=150, launch_dur=5, ts=400, dur=20,
                    cat="gpu_memcpy", runtime="cudaMemcpyAsync", bytes=1024)
    b.memory(25, 4096, total_allocated=4096, total_reserved=1 << 20)
    b.counter("stepscope.cpu_pct", 5, value=12.5)
    b.flow(1001, 30, "s")
    b.flow(1001, 60, "f", pid=0, tid=7)
    b.step(2, 500, 500)
    b.op("aten::relu", 520, 30)
    b.launch_kernel("relu_kernel", launch_ts=525, launch_dur=5, ts=600, dur=40)
    return b.write(Path(tempfile.mkdtemp()) / "seed.json").read_bytes()


SEED = _seed()
JUNK = st.binary(min_size=1, max_size=16) | st.sampled_from(
    [b"{", b"}", b"[", b"]", b",", b'"', b"\\", b":", b"null", b"1e999", b"-", b"\x00", b"\x1f\x8b", b"NaN"])


@st.composite
def mutations(draw: st.DrawFn, ascii_only: bool) -> bytes:
    data = bytearray(SEED)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] = draw(st.integers(0, 127 if ascii_only else 255))
        elif op == "cut":
            del data[pos:]
        elif op == "insert":
            junk = draw(JUNK)
            if ascii_only:
                junk = bytes(c & 0x7F for c in junk)
            data[pos:pos] = junk
        elif data:
            del data[pos : pos + draw(st.integers(1, 64))]
    return bytes(data)


def _check(data: bytes, gz: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / ("t.json.gz" if gz else "t.json")
        path.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
        t0 = time.perf_counter()
        try:
            trace = stepscope.load(path, use_cache=False, workers=1)
        except StepscopeError as exc:
            assert "\n" not in str(exc)
        else:
            assert len(trace.events) >= 0
        assert time.perf_counter() - t0 < MAX_SECONDS
        assert path.read_bytes()[:2] == (b"\x1f\x8b" if gz else data[:2])


FUZZ = settings(max_examples=200, deadline=MAX_SECONDS * 1000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(data=mutations(ascii_only=True), gz=st.booleans())
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_ascii_mutations_never_crash(data: bytes, gz: bool) -> None:
    _check(data, gz)


@FUZZ
@given(data=mutations(ascii_only=False), gz=st.booleans())
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_binary_mutations_never_crash(data: bytes, gz: bool) -> None:
    _check(data, gz)


@settings(FUZZ, max_examples=100)
@given(junk=st.binary(max_size=64), at=st.integers(0, 1 << 20))
def test_gzip_stream_damage_never_crashes(junk: bytes, at: int) -> None:
    """Damage to the compressed bytes themselves (a corrupt .gz, not a corrupt JSON)."""
    gz = bytearray(gzip.compress(SEED))
    at = 2 + at % (len(gz) - 2)
    gz[at : at + len(junk)] = junk
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.json.gz"
        path.write_bytes(bytes(gz))
        t0 = time.perf_counter()
        with contextlib.suppress(StepscopeError):
            stepscope.load(path, use_cache=False, workers=1)
        assert time.perf_counter() - t0 < MAX_SECONDS
