"""Gzip traces are decompressed by ISA-L / zlib-ng when installed, in a thread of their own: the chunks,
and so the trace, are the ones the zlib path gives, damaged files included (multi-member, junk after
the last member, a cut stream)."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import stepscope
from stepscope.ingest.readers import gzip_stream
from stepscope.ingest.readers.gzip_stream import cut_chunks, gzip_filler, threaded

EVENT = '{{\n    "ph": "X", "cat": "cpu_op", "name": "op{i}", "pid": 1, "tid": 1, "ts": {ts}, "dur": 3\n  }}'


def _trace_text(n: int) -> bytes:
    events = ",\n  ".join(EVENT.format(i=i % 97, ts=10 * i) for i in range(n))
    return ('{"schemaVersion": 1, "traceEvents": [\n  ' + events + "\n]}").encode()


def _chunks(path: Path, skip: int, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], list[int]]:
    if not fast:
        monkeypatch.setattr(gzip_stream, "FAST", None)
    junk: list[int] = []
    got = [c for c, _ in cut_chunks(gzip_filler(str(path), junk.append), skip, 64 << 10)]
    monkeypatch.undo()
    return got, junk


def _write(tmp_path: Path, data: bytes, name: str = "t.json.gz") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.fixture
def text() -> bytes:
    return _trace_text(30_000)  # ~3 MB: dozens of 64 KiB chunks


@pytest.mark.skipif(gzip_stream.FAST is None, reason="neither isal nor zlib-ng is installed")
@pytest.mark.parametrize("case", ["one member", "two members", "junk after", "cut short", "zero padding"])
def test_the_fast_reader_gives_the_chunks_of_the_zlib_path(tmp_path: Path, text: bytes, case: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    half = len(text) // 2
    data = {"one member": gzip.compress(text, 1),
            "two members": gzip.compress(text[:half], 1) + gzip.compress(text[half:], 6),
            "junk after": gzip.compress(text, 1) + b"not gzip at all" * 10,
            "cut short": gzip.compress(text, 1)[:-5000],
            "zero padding": gzip.compress(text, 1) + bytes(512)}[case]
    path = _write(tmp_path, data)
    at = text.index(b"[") + 1
    fast, fast_junk = _chunks(path, at, True, monkeypatch)
    slow, slow_junk = _chunks(path, at, False, monkeypatch)
    assert fast == slow and fast_junk == slow_junk
    assert len(fast) > 20
    joined = b"".join(fast)
    if case in ("one member", "two members", "junk after"):
        assert joined == text[at:]
    if case == "junk after":
        assert fast_junk == [150]
    if case == "cut short":
        assert text[at:].startswith(joined) and len(joined) > half


def test_every_cut_is_before_an_event(tmp_path: Path, text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, gzip.compress(text, 1))
    chunks, _ = _chunks(path, text.index(b"[") + 1, True, monkeypatch)
    assert all(c.lstrip().startswith(b"{") for c in chunks)


def test_a_head_longer_than_one_fill_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(9)]
    raw = json.dumps({"note": "x" * (3 << 20), "traceEvents": events}).encode()
    path = _write(tmp_path, gzip.compress(raw, 1))
    at = raw.index(b"[") + 1
    for fast in (True, False):
        chunks, _ = _chunks(path, at, fast, monkeypatch)
        assert b"".join(chunks) == raw[at:]
    trace = stepscope.load(path, use_cache=False)
    assert len(trace.events) == 9


def test_a_gzip_trace_loads_as_its_plain_copy(tmp_path: Path, text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.ingest.readers import kineto_chunks

    monkeypatch.setattr(kineto_chunks, "CHUNK_BYTES", 64 << 10)
    plain = stepscope.load(_write(tmp_path, text, "t.json"), use_cache=False, workers=2)
    packed = stepscope.load(_write(tmp_path, gzip.compress(text, 1)), use_cache=False, workers=2)
    assert len(packed.events) == len(plain.events) == 30_000
    assert packed.events["ts_ns"].tolist() == plain.events["ts_ns"].tolist()
    assert list(packed.strings.decode(packed.events["name"])) == list(plain.strings.decode(plain.events["name"]))


def test_threaded_raises_the_producers_error_and_stops_it_early() -> None:
    def failing() -> Iterator[int]:
        yield 1
        raise zlib.error("boom")

    with pytest.raises(zlib.error, match="boom"):
        list(threaded(failing()))
    made: list[int] = []

    def endless() -> Iterator[int]:
        i = 0
        while True:
            made.append(i)
            yield i
            i += 1

    before = threading.active_count()
    for got in threaded(endless(), depth=2):
        if got == 3:
            break
    assert threading.active_count() == before
    assert len(made) <= 3 + 2 + 2  # at most depth ahead (plus the one blocked on a full queue)
