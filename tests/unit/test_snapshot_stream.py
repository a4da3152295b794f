"""The streaming snapshot reader equals the restricted unpickler's, on every shape it takes, in small chunks."""

from __future__ import annotations

import json
import pickle
import pickletools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.analysis.allocator import summarize
from stepscope.ingest import snapshot_ops as so
from stepscope.ingest import snapshot_stream
from stepscope.ingest.snapshot import _streamed, read_snapshot

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "decomfl" / \
    "zo_fl_training_memory_snapshot" / "memory.pickle"


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 64 KiB: entries, lists and frame dicts cut across chunks."""
    monkeypatch.setattr(snapshot_stream, "CHUNK_BYTES", 1 << 16)


def _same(p: Path) -> None:
    streamed = _streamed(p)
    assert streamed is not None, "read whole, not streamed"
    plain = read_snapshot(p, stream=False)
    for k in ("device", "action", "addr", "size", "time_us"):
        assert np.array_equal(streamed.trace[k], plain.trace[k]), k
    assert [streamed.stack_text(int(s)) for s in streamed.trace["stack"]] == \
        [plain.stack_text(int(s)) for s in plain.trace["stack"]]
    assert [streamed.frame_text(int(s)) for s in streamed.trace["site"]] == \
        [plain.frame_text(int(s)) for s in plain.trace["site"]]
    assert json.dumps(summarize(streamed).to_dict(), sort_keys=True) == \
        json.dumps(summarize(plain).to_dict(), sort_keys=True)


def _frame(i: int) -> dict[str, Any]:
    return {"name": f"fn{i % 11}", "filename": f"/src/mod{i % 5}.py" if i % 3 else
            f"/venv/lib/site-packages/torch/x{i % 4}.py", "line": (i * 37) % 3000}


def _torch_like(n: int, devices: int) -> dict[str, Any]:
    """As torch writes it: frame dicts shared between blocks and entries (memo references), some frames
    lists shared, new frames first seen inside the history, a device with one entry and one with none."""
    frames = [_frame(i) for i in range(60)]
    shared = [frames[3], frames[7], frames[11]]
    traces: list[list[dict[str, Any]]] = []
    for d in range(devices):
        entries = []
        for i in range(n):
            fr = shared if i % 7 == 0 else [frames[(i + k) % 60] for k in range(i % 9)]
            if i % 13 == 0:
                fr = [_frame(1000 + i), *fr]  # a frame first seen here
            entries.append({"action": ("alloc", "free_requested", "free_completed", "segment_alloc")[i % 4],
                            "addr": 0x7F00_0000_0000 + (i // 2) * 512, "size": (1 << (i % 31)) + d, "stream": 0,
                            "time_us": 1_763_324_225_770_003 + i * 17, "compile_context": "N/A", "frames": fr})
        traces.append(entries)
    traces += [[dict(traces[0][7])], []]  # one entry (its frames list one of the history's), none
    blocks = [{"address": 0x1000 * i, "size": 512, "requested_size": 500, "state": "active_allocated",
               "frames": [frames[i], frames[i + 1]]} for i in range(40)]
    seg = {"device": 0, "address": 0x1000, "total_size": 1 << 21, "allocated_size": 20480, "active_size": 20480,
           "requested_size": 20000, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
           "frames": [], "blocks": blocks}
    return {"segments": [seg], "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False},
            "external_annotations": [{"version": 1, "name": "zero_grad", "stage": "START", "device": 0,
                                      "time_us": 1_763_324_225_770_100}]}


def test_a_torch_like_snapshot_streams_equal_to_the_plain_read(tmp_path: Path) -> None:
    p = tmp_path / "torch_like.pickle"
    p.write_bytes(pickle.dumps(_torch_like(3000, 2), protocol=4))
    _same(p)
    s = read_snapshot(p)
    assert len(s.trace["addr"]) == 6001 and s.settings == {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False}


def test_entries_holding_small_dicts_stream_equal(tmp_path: Path) -> None:
    """Entries with an extra dict value of 0, 1 or 2 keys (as user metadata may be)."""
    doc = _torch_like(2500, 1)
    for i, e in enumerate(doc["device_traces"][0]):
        e["user_metadata"] = ({}, {"step": i}, {"step": i, "tag": "fwd"})[i % 3]
    p = tmp_path / "meta.pickle"
    p.write_bytes(pickle.dumps(doc, protocol=4))
    _same(p)


def test_the_bench_shape_streams_equal_to_the_plain_read(tmp_path: Path) -> None:
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_snapshot", Path(__file__).parents[2] / "bench" /
                                                  "make_snapshot.py")
    assert spec and spec.loader
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    p = tmp_path / "bench.pickle"
    p.write_bytes(pickle.dumps({"segments": [], "device_traces": [mk.entries(1 << 20)], "allocator_settings": {}},
                               protocol=4))
    _same(p)


def test_the_real_snapshot_streams_equal_to_the_plain_read() -> None:
    if not REAL.exists():
        pytest.skip(f"{REAL} not found")
    _same(REAL)


def test_the_tokens_are_the_pickles_opcodes(tmp_path: Path) -> None:
    data = pickle.dumps(_torch_like(500, 1), protocol=4)
    frames = so.frame_ranges(data[:2], len(data), lambda p, n: data[p:p + n])
    assert frames is not None
    tok = so.tokenize(data, np.array([s for s, _ in frames]), np.array([e for _, e in frames]))
    want = [pos for op, _, pos in pickletools.genops(data) if op.name not in ("PROTO", "FRAME")]
    assert tok.tolist() == want


def _decoys() -> list[Any]:
    """Strings whose bytes read as opcodes: a walker started inside one takes a wrong path (a BINUNICODE 'X' with a
    huge length, BININT 'J', SHORT_BINUNICODE), strings longer than a segment, ints and floats."""
    out: list[Any] = []
    for i in range(400):
        out.append("X\xff\xff\xff\x7f" * (i % 7) + "J" * (i % 5) + "\x8c\xfe" * (i % 3) + "abc" * (i % 11))
        out.append({"filename": "h" * (i * 13 % 3000), "line": -i * 7919, "name": "Xj" * (i % 40)})
        out.append([i * 1.5, 2**40 + i, None, True, (i, "u" * (i % 300))])
    return out


@pytest.mark.parametrize("seg_bytes", [16, 64, 1024])
def test_the_tokens_are_the_opcodes_whatever_the_segments(monkeypatch: pytest.MonkeyPatch, seg_bytes: int) -> None:
    monkeypatch.setattr(so, "SEG_BYTES", seg_bytes)
    monkeypatch.setattr(so, "_GROUP", 5)  # many groups of walkers
    data = pickle.dumps(_decoys(), protocol=4)
    frames = so.frame_ranges(data[:2], len(data), lambda p, n: data[p:p + n])
    assert frames is not None and len(frames) > 3
    tok = so.tokenize(data, np.array([s for s, _ in frames]), np.array([e for _, e in frames]))
    want = [pos for op, _, pos in pickletools.genops(data) if op.name not in ("PROTO", "FRAME")]
    assert tok.tolist() == want


@pytest.mark.parametrize("protocol", [2, 3])
def test_an_unframed_pickle_is_read_whole(tmp_path: Path, protocol: int) -> None:
    p = tmp_path / "old.pickle"
    p.write_bytes(pickle.dumps(_torch_like(50, 1), protocol=protocol))
    assert _streamed(p) is None
    assert len(read_snapshot(p).trace["addr"]) == 51


def test_rows_are_grouped_by_key_also_when_keys_share_their_low_bits() -> None:
    rng = np.random.default_rng(3)
    distinct = np.concatenate([(np.arange(40, dtype=np.uint64) << np.uint64(20)) | np.uint64(5),  # one slot
                               rng.integers(0, 2**62, 300).astype(np.uint64)])
    keys = distinct[rng.integers(0, len(distinct), 5000)]
    rep, inv = so.unique_inverse(keys)
    want, want_inv = np.unique(keys, return_inverse=True)
    assert keys[rep].tolist() == want.tolist()
    assert inv.tolist() == want_inv.ravel().tolist()
