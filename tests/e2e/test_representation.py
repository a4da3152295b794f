"""What a trace says does not depend on how it is written: real traces rewritten in the other ways
Kineto and the tools after it write the same facts give the same document — events in another order,
the legacy arg keys, pid / tid as text instead of numbers (or the reverse), the flow events left
out (the correlation ids link the launches), every timestamp on a later clock. Where two groups tie
(two kernels of equal total time), their names order them, not the file's order of events."""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stepscope import load
from stepscope.analysis.bundle import analyze
from stepscope.cli.analyze_cmd import findings_for
from stepscope.report.advice_json import finding_dict
from stepscope.report.json_out import to_json

TRACES = ["kineto_tb_plugin/resnet50_num_workers_0", "hta/nccl_resnet_a100_rank0_of2"]
Event = dict[str, Any]


def _shuffled(events: list[Event]) -> None:
    random.Random(0).shuffle(events)


def _legacy_keys(events: list[Event]) -> None:
    for e in events:
        args = e.get("args")
        if isinstance(args, dict):
            for new, old in (("External id", "external id"), ("Input Dims", "Input dims")):
                if new in args:
                    args[old] = args.pop(new)


def _ids_swapped(events: list[Event]) -> None:
    for e in events:
        for k in ("pid", "tid"):
            v = e.get(k)
            if isinstance(v, int):
                e[k] = str(v)
            elif isinstance(v, str) and v.isdigit():
                e[k] = int(v)


def _no_flows(events: list[Event]) -> None:
    events[:] = [e for e in events if e.get("ph") not in ("s", "f", "t")]


def _later_clock(events: list[Event]) -> None:
    for e in events:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] += 7_000_000_000  # two hours on, whole µs


REWRITES: dict[str, Callable[[list[Event]], None]] = {
    "shuffled": _shuffled, "legacy_keys": _legacy_keys, "ids_swapped": _ids_swapped, "no_flows": _no_flows,
    "later_clock": _later_clock}


def _rewrite(src: Path, dst: Path, how: Callable[[list[Event]], None] | None) -> Path:
    dst.mkdir(parents=True)
    for f in sorted(p for p in src.iterdir() if ".json" in p.name):
        raw = f.read_bytes()
        doc: Any = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        if how is not None:
            how(doc["traceEvents"])
        (dst / f.name.replace(".gz", "")).write_text(json.dumps(doc))
    return dst


def _document(path: Path) -> dict[str, Any]:
    bundle = analyze(load(path, use_cache=False))
    with bundle.memo.active():
        doc: dict[str, Any] = json.loads(json.dumps(to_json(bundle, [finding_dict(f) for f in findings_for(bundle)]),
                                                    default=str))
    doc.pop("source")
    for d in doc.get("diagnostics", []):  # the rewritten copy's path
        d.pop("source", None)
    return doc


@pytest.mark.parametrize("rel", TRACES)
def test_the_same_facts_written_otherwise_give_the_same_document(shared_traces: Path, tmp_path: Path,
                                                                 rel: str) -> None:
    want = _document(_rewrite(shared_traces / rel, tmp_path / "as_is", None))
    for name, how in REWRITES.items():
        assert _document(_rewrite(shared_traces / rel, tmp_path / name, how)) == want, name


H200 = Path(__file__).resolve().parents[1] / "data" / "h200_bounds"


@pytest.mark.parametrize("rel", ["sync_stack", "cpu_op_stack"])
def test_our_h200_captures_with_python_frames_too(tmp_path: Path, rel: str) -> None:
    """The same on two of our H200 captures recorded with ``with_stack=True`` (Python frames around
    every op, the profiler's own sync at stop, a ``.cpu()`` inside a pageable copy call, a CPU op that
    launches nothing): the frames, the host spans and the launching ops are found the same whatever
    the file's order, keys, id types or clock."""
    want = _document(_rewrite(H200 / rel, tmp_path / "as_is", None))
    for name, how in REWRITES.items():
        assert _document(_rewrite(H200 / rel, tmp_path / name, how)) == want, name
