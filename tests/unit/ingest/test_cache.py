"""The parse cache: reused when the input is unchanged, invalidated when it changes, rebuilt when
corrupt, bypassed with ``use_cache=False``; writes are atomic and never touch the input."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.model.schema import TABLE_SCHEMAS
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder
from tests.corpus import SHARED_TRACES
from tests.unit.ingest.helpers import fingerprint

MID_TRACE = "hta/nccl_resnet_a100_rank0_of2/nccl_data.json.gz"  # 27k events: parse ≫ cache read


def assert_same(a: Trace, b: Trace) -> None:
    for name in TABLE_SCHEMAS:
        ta, tb = getattr(a, name), getattr(b, name)
        assert len(ta) == len(tb), name
        for c in ta:
            assert np.array_equal(ta[c], tb[c], equal_nan=ta[c].dtype.kind == "f"), f"{name}.{c}"
    assert list(a.strings.strings) == list(b.strings.strings)
    assert a.ranks == b.ranks
    assert a.diagnostics == b.diagnostics
    assert a.source == b.source


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir()) if cache.exists() else []


def _micro(tmp_path: Path, dur: float = 10) -> Path:
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.op("aten::mm", 5, dur)
    b.launch_kernel("gemm", launch_ts=6, launch_dur=2, ts=20, dur=30)
    b.memory(7, 64, total_allocated=64, total_reserved=1024)
    return b.write(tmp_path / "micro.json")


def test_second_load_comes_from_cache(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    if not (SHARED_TRACES / MID_TRACE).is_file():
        pytest.skip(f"real trace {MID_TRACE} not found under {SHARED_TRACES}")
    src = tmp_path / "trace.json.gz"
    src.write_bytes((SHARED_TRACES / MID_TRACE).read_bytes())
    before = fingerprint(src)
    t0 = time.perf_counter()
    first = stepscope.load(src)
    t_parse = time.perf_counter() - t0
    assert len(parses) == 1 and len(_entries(cache)) == 1
    t0 = time.perf_counter()
    second = stepscope.load(src)
    t_cached = time.perf_counter() - t0
    assert len(parses) == 1, "the second load parsed again"
    assert t_cached < t_parse / 2, f"cache read {t_cached:.3f} s vs parse {t_parse:.3f} s"
    assert_same(first, second)
    assert fingerprint(src) == before
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp")], "a temporary cache dir was left"


def test_changed_input_invalidates(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = _micro(tmp_path, dur=10)
    a = stepscope.load(path)
    path = _micro(tmp_path, dur=11)  # same size, same name: only the content differs
    b = stepscope.load(path)
    assert len(parses) == 2
    names = b.names(b.events["name"])
    assert b.events["dur_ns"][names == "aten::mm"].tolist() == [11_000]
    assert a.events["dur_ns"][a.names(a.events["name"]) == "aten::mm"].tolist() == [10_000]
    stepscope.load(path)
    assert len(parses) == 2


@pytest.mark.parametrize("damage", ["truncate_events", "truncate_strings", "delete_memory", "garbage_meta",
                                    "empty_meta"])
def test_corrupt_cache_is_rebuilt(tmp_path: Path, cache: Path, parses: list[str], damage: str) -> None:
    path = _micro(tmp_path)
    good = stepscope.load(path)
    (entry,) = _entries(cache)
    if damage == "truncate_events":
        f = entry / "events.arrow"
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    elif damage == "truncate_strings":
        f = entry / "strings.arrow"
        f.write_bytes(f.read_bytes()[:40])
    elif damage == "delete_memory":
        (entry / "memory.arrow").unlink()
    elif damage == "garbage_meta":
        (entry / "meta.json").write_bytes(b"\x00\xff{not json")
    else:
        (entry / "meta.json").write_text("{}")
    rebuilt = stepscope.load(path)
    assert len(parses) == 2, "a damaged cache entry was used instead of parsing again"
    assert_same(good, rebuilt)
    again = stepscope.load(path)
    assert len(parses) == 2, "the rebuilt cache entry is not used"
    assert_same(good, again)


def test_no_cache_writes_nothing(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    path = _micro(tmp_path)
    stepscope.load(path, use_cache=False)
    stepscope.load(path, use_cache=False)
    assert len(parses) == 2
    assert not cache.exists() or not any(cache.iterdir()), list(cache.rglob("*"))


def test_unwritable_cache_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("STEPSCOPE_CACHE_DIR", str(blocker / "cache"))
    trace = stepscope.load(_micro(tmp_path))
    assert len(trace.events) == 4
    assert blocker.read_text().startswith("a file")


def test_selection_is_part_of_the_key(tmp_path: Path, cache: Path, parses: list[str]) -> None:
    """Loading one rank of a run must not be answered from the cache of another selection."""
    run = tmp_path / "run"
    run.mkdir()
    for rank in (0, 1):
        b = TraceBuilder(rank=rank, world_size=2)
        b.op(f"op_rank{rank}", 0, 10)
        b.write(run / f"rank{rank}.json")
    both = stepscope.load(run)
    only1 = stepscope.load(run, ranks=[1])
    assert both.rank_ids == [0, 1] and only1.rank_ids == [1]
    assert len(parses) == 2


def test_a_cached_trace_shows_the_path_this_user_typed(tmp_path: Path, cache: Path, parses: list[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """One cache entry serves every path to the same bytes; each read shows its own path, not the
    path of whoever cached it first (nor its files or the diagnostics naming them)."""
    b = TraceBuilder()
    b.op("aten::mm", ts=0, dur=10)
    (tmp_path / "alice").mkdir()
    first = b.write(tmp_path / "alice" / "run.json")
    second = tmp_path / "bob" / "copy_of_run.json"
    second.parent.mkdir()
    second.write_bytes(first.read_bytes())
    a = stepscope.load(first)
    monkeypatch.chdir(tmp_path / "bob")
    c = stepscope.load("copy_of_run.json")
    assert parses == [str(first)]  # the second read came from the cache
    assert a.source == str(first) and c.source == "copy_of_run.json"
    assert [r.source for r in c.ranks] == ["copy_of_run.json"]
    assert all(str(first) not in (d.source + d.example) for d in c.diagnostics)
    assert stepscope.load(first).source == str(first)


def test_an_entry_holds_the_compact_model_and_reads_back_exactly(tmp_path: Path) -> None:
    """Columns of absent values are not stored, integers in the narrowest type that holds them;
    every column reads back with its value and its schema dtype."""
    import dataclasses

    import pyarrow as pa

    from stepscope.model import store

    trace = stepscope.load(_micro(tmp_path), use_cache=False)
    n = len(trace.events)
    corr = np.full(n, -1, np.int64)
    corr[0] = 1 << 40  # needs int64
    ext = 32_000 + np.arange(n, dtype=np.int64)  # fits int16
    grid = np.full(n, 70_000, np.int32)  # needs int32
    trace = dataclasses.replace(trace, events=trace.events.with_columns(corr=corr, ext_id=ext, grid_x=grid))
    store.save(trace, tmp_path / "entry")
    back = store.load(tmp_path / "entry")
    assert_same(trace, back)
    for name, schema in TABLE_SCHEMAS.items():
        for col, (dtype, _) in schema.items():
            assert getattr(back, name)[col].dtype == np.dtype(dtype), f"{name}.{col}"
    with pa.memory_map(str(tmp_path / "entry" / "events.arrow")) as src:
        stored = pa.ipc.open_file(src).schema
    assert stored.field("corr").type == pa.int64()
    assert stored.field("ext_id").type == pa.int16()
    assert stored.field("grid_x").type == pa.int32()
    assert stored.field("kind").type == pa.int8()
    assert "seq" not in stored.names and "flops" not in stored.names  # all -1, all NaN
    assert back.events["seq"].tolist() == [-1] * n and np.isnan(back.events["flops"]).all()
