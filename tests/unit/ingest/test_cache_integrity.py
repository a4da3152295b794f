"""A cache that cannot lie (issue 21): a flipped bit in any cached file, a ``meta.json`` of the wrong
shape, a killed write's leftovers, two inputs sharing one entry — each is detected and rebuilt from
the source (with one warning line), never shown as data."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest
import xxhash

import stepscope
from stepscope.model import store
from tests.builders import TraceBuilder
from tests.unit.ingest.test_cache import _entries, assert_same

POSITIONS = 7  # bits flipped per cached file, spread over it


def _kernel_trace(tmp_path: Path, name: str = "micro.json") -> Path:
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.op("aten::mm", 5, 10)
    b.launch_kernel("gemm_kernel", launch_ts=6, launch_dur=2, ts=20, dur=30)
    b.memory(7, 64, total_allocated=64, total_reserved=1024)
    return b.write(tmp_path / name)


def _flip(path: Path, offset: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def _rebuilt_warning(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "is damaged" in r.getMessage()]


def test_a_flipped_bit_in_a_kernel_name_is_never_shown(tmp_path: Path, cache: Path, parses: list[str],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    path = _kernel_trace(tmp_path)
    good = stepscope.load(path)
    (entry,) = _entries(cache)
    strings = entry / "strings.arrow"
    _flip(strings, strings.read_bytes().index(b"gemm_kernel"))  # 'g' -> 'f'
    again = stepscope.load(path)
    assert "femm_kernel" not in again.strings.strings and "gemm_kernel" in again.strings.strings
    assert len(parses) == 2, "the damaged entry was not rebuilt"
    assert_same(good, again)
    (line,) = _rebuilt_warning(caplog)
    assert "strings.arrow" in line and str(path) in line and "\n" not in line


@pytest.mark.parametrize("name", [*(f"{t}.arrow" for t in ("events", "tracks", "steps", "memory", "counters",
                                                            "flows", "strings")), "meta.json"])
def test_a_flipped_bit_anywhere_is_detected_and_rebuilt(tmp_path: Path, cache: Path, parses: list[str],
                                                        caplog: pytest.LogCaptureFixture, name: str) -> None:
    path = _kernel_trace(tmp_path)
    good = stepscope.load(path)
    (entry,) = _entries(cache)
    size = (entry / name).stat().st_size
    for k in range(POSITIONS):
        offset = min(size - 1, k * size // (POSITIONS - 1))
        _flip(entry / name, offset, bit=k % 8)
        again = stepscope.load(path)
        assert_same(good, again)
        assert len(parses) == 2 + k, f"a flip at byte {offset} of {name} was not detected"
        (entry,) = _entries(cache)  # rebuilt in place
    assert len(_rebuilt_warning(caplog)) == POSITIONS


def _envelope(meta: object) -> bytes:
    body = json.dumps(meta).encode()
    return b'{"xxh3_128":"' + xxhash.xxh3_128_hexdigest(body).encode() + b'","meta":' + body + b"}"


def _wrong_shapes(good: dict[str, object]) -> dict[str, bytes]:
    ranks = good["ranks"]
    assert isinstance(ranks, list)
    return {"list": b"[]", "number": b"1", "string": b'"meta"', "null": b"null",
            "envelope of a list": _envelope([]),
            "rows a number": _envelope({**good, "rows": 5}),
            "rank a string": _envelope({**good, "ranks": [{**ranks[0], "rank": "x"}]}),
            "unknown table": _envelope({**good, "rows": {**good["rows"], "extra": 1}}),  # type: ignore[dict-item]
            "no checksums": _envelope({k: v for k, v in good.items() if k != "checksums"}),
            "digest of other bytes": _envelope(good).replace(b'"version":', b'"version" :')}


def test_meta_json_of_the_wrong_shape_is_rebuilt(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = _kernel_trace(tmp_path)
    good = stepscope.load(path)
    (entry,) = _entries(cache)
    saved = json.loads((entry / "meta.json").read_bytes())["meta"]
    for what, text in _wrong_shapes(saved).items():
        (entry / "meta.json").write_bytes(text)
        n = len(parses)
        again = stepscope.load(path)
        assert len(parses) == n + 1, f"meta.json as {what} was used"
        assert_same(good, again)
        (entry,) = _entries(cache)


def test_an_intact_entry_reads_its_envelope(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = _kernel_trace(tmp_path)
    stepscope.load(path)
    (entry,) = _entries(cache)
    meta = store.read_meta(entry)
    assert set(meta.checksums) == {p.name for p in entry.glob("*.arrow")}
    assert meta.checksums["events.arrow"] == xxhash.xxh3_128_hexdigest((entry / "events.arrow").read_bytes())
    stepscope.load(path)
    assert len(parses) == 1


def test_a_killed_writes_leftovers_are_removed_but_not_a_live_one(tmp_path: Path, cache: Path) -> None:
    cache.mkdir(parents=True)
    old, live = cache / ".tmp-killed", cache / ".tmp-writing"
    for d in (old, live):
        d.mkdir()
        (d / "events.arrow").write_bytes(b"\0" * 100)
    stale = time.time() - store.ORPHAN_AGE_S - 60
    os.utime(old / "events.arrow", (stale, stale))
    os.utime(old, (stale, stale))
    stepscope.load(_kernel_trace(tmp_path))
    assert not old.exists(), "an orphan of a killed write was left"
    assert live.exists(), "a temporary directory still being written was removed"
    assert len([p for p in _entries(cache) if not p.name.startswith(".")]) == 1


def test_a_temporary_directory_with_a_fresh_file_is_kept(tmp_path: Path) -> None:
    """A writer still writing its last file leaves the directory's own time old: its files count."""
    d = tmp_path / ".tmp-slow"
    d.mkdir()
    (d / "events.arrow").write_bytes(b"\0")
    stale = time.time() - store.ORPHAN_AGE_S - 60
    os.utime(d, (stale, stale))
    store.remove_orphans(tmp_path)
    assert d.exists()


def test_same_bytes_under_two_rank_names_keep_their_own_ranks(tmp_path: Path, cache: Path) -> None:
    """The rank a file's name gives (no distributedInfo) is part of the read: the two copies of one
    trace are ranks 3 and 5, however the cache shares their bytes."""
    first = _kernel_trace(tmp_path, "rank3.json")
    second = tmp_path / "rank5.json"
    second.write_bytes(first.read_bytes())
    assert stepscope.load(first).rank_ids == [3]
    five = stepscope.load(second)
    assert five.rank_ids == [5] and five.source == str(second)
    assert [r.source for r in five.ranks] == [str(second)]
    assert stepscope.load(first).rank_ids == [3]
