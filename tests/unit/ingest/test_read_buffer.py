"""Chunk reads reuse one buffer per process, but never one that something still views."""

from __future__ import annotations

from pathlib import Path

from stepscope.ingest.readers import kineto_chunks as kc


def _job(path: Path, start: int, end: int) -> kc.ChunkJob:
    return kc.ChunkJob(0, str(path), start, end, None, False, False)


def test_reads_are_exact_whatever_the_previous_size(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    f = tmp_path / "t.json"
    f.write_bytes(data)
    for start, end in [(0, 5000), (100, 300), (7, 9000), (9000, 10240), (1, 2)]:
        buf = kc._job_bytes(_job(f, start, end))
        assert bytes(buf[1:]) == data[start:end]  # byte 0 is the spare one for '['
        assert len(buf) == end - start + 1


def test_a_viewed_buffer_is_not_reused(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_bytes(b"a" * 100 + b"b" * 100)
    first = kc._job_bytes(_job(f, 0, 100))
    view = memoryview(first)  # as msgspec.Raw values of a chunk still being converted would
    second = kc._job_bytes(_job(f, 100, 200))
    assert second is not first
    assert bytes(view[1:]) == b"a" * 100 and bytes(second[1:]) == b"b" * 100
    view.release()
    third = kc._job_bytes(_job(f, 50, 150))
    assert third is second  # the buffer nobody views any more is the one reused
    assert bytes(third[1:]) == b"a" * 50 + b"b" * 50
