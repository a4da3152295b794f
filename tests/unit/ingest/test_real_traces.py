"""Every Kineto file under /work/shared/traces loads with no error-severity diagnostic and with the
counts that SOURCES.md / inventory.json give (kernels, memcpy, memset, ProfilerStep, memory
events, flows, runtime calls); the events table is checked against a stdlib-``json`` count."""

from __future__ import annotations

import functools
import gzip
import json
import re
from collections import Counter
from typing import Any

import pytest

import stepscope
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace
from tests.corpus import DLRM_DIR, SHARED_TRACES, table_of

INVENTORY = SHARED_TRACES / "inventory.json"


def _kineto_files() -> list[Any]:
    if not INVENTORY.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{INVENTORY} not found"))]
    inv = json.loads(INVENTORY.read_text())
    return [pytest.param(rel, id=rel.split("/")[1]) for rel in sorted(inv)
            if rel.endswith((".json", ".json.gz")) and inv[rel].get("n_events")
            and not rel.startswith(("ascend", "nsys"))]


def _inventory(rel: str) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(INVENTORY.read_text())[rel]
    return entry


@functools.cache
def _load(rel: str) -> Trace:
    """Each real file parsed once per session (no cache: the parse itself is under test)."""
    return stepscope.load(SHARED_TRACES / rel, use_cache=False)


def _count(trace: Trace, *kinds: EventKind) -> int:
    return int(trace.kind_mask(*kinds).sum())


@pytest.mark.parametrize("rel", _kineto_files())
def test_kineto_file_loads_with_inventory_counts(rel: str) -> None:
    inv = _inventory(rel)
    feats = inv["features"]
    trace = _load(rel)
    errors = [d for d in trace.diagnostics if d.severity == "error"]
    assert not errors, errors
    assert _count(trace, EventKind.KERNEL) == feats.get("kernels", 0)
    assert _count(trace, EventKind.MEMCPY) == feats.get("memcpy", 0)
    assert _count(trace, EventKind.MEMSET) == feats.get("memset", 0)
    assert _count(trace, EventKind.RUNTIME) == feats.get("cuda_runtime", 0)
    assert len(trace.memory) == feats.get("memory_events", 0)
    assert len(trace.flows) == feats.get("flow_events", 0)
    names = trace.names(trace.events["name"])
    assert sum("ProfilerStep" in str(n) for n in names) == feats.get("ProfilerStep", 0)
    # every event of the file is somewhere: a stdlib json count per stepscope table
    raw = (SHARED_TRACES / rel).read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert len(events) == inv["n_events"]
    per_table = Counter(table_of(e) for e in events)
    assert len(trace.events) == per_table["events"]
    assert len(trace.counters) == per_table["counters"]
    host_steps = {e["name"] for e in events if isinstance(e.get("name"), str)
                  and re.fullmatch(r"ProfilerStep#\d+", e["name"]) and e.get("cat") != "gpu_user_annotation"}
    assert len(trace.steps) == len(host_steps)
    devices = inv.get("devices") or {}
    assert len(trace.ranks) == 1
    assert len(trace.ranks[0].devices) == sum(devices.values())
    dist = inv.get("distributedInfo")
    if isinstance(dist, dict) and "rank" in dist:
        assert trace.rank_ids == [dist["rank"]]
        assert trace.ranks[0].world_size == dist.get("world_size")


def _sources_row(label: str) -> dict[str, int]:
    """The nw0 / nw4 row of SOURCES.md's tb_plugin table, as numbers."""
    text = (SHARED_TRACES / "SOURCES.md").read_text()
    header = next(ln for ln in text.splitlines() if ln.startswith("| file |") and "kernels" in ln)
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {label} "))
    keys = [c.strip() for c in header.strip("|").split("|")]
    vals = [c.strip() for c in line.strip("|").split("|")]
    out = {}
    for k, v in zip(keys, vals):
        if re.fullmatch(r"[\d,]+", v):
            out[k] = int(v.replace(",", ""))
    return out


@pytest.mark.parametrize(("label", "rel"), [
    ("nw0", "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"),
    ("nw4", "kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"),
])
def test_tb_plugin_counts_match_sources_md(label: str, rel: str) -> None:
    if not (SHARED_TRACES / "SOURCES.md").is_file() or not (SHARED_TRACES / rel).is_file():
        pytest.skip(f"SOURCES.md or {rel} not found under {SHARED_TRACES}")
    row = _sources_row(label)
    trace = _load(rel)
    assert _count(trace, EventKind.KERNEL) == row["kernels"]
    assert _count(trace, EventKind.MEMCPY) == row["memcpy"]
    assert _count(trace, EventKind.MEMSET) == row["memset"]
    assert len(trace.memory) == row["`[memory]`"]
    assert len(trace.steps) == row["ProfilerStep"]
    assert trace.steps["step"].tolist() == [5, 6, 7, 8, 9, 10]
    span_ms = (trace.steps["end_ns"].max() - trace.steps["start_ns"].min()) / 1e6
    assert span_ms <= 1066 + 1 if label == "nw0" else span_ms <= 847 + 1


def test_dlrm_run_directory_loads_eight_ranks() -> None:
    d = SHARED_TRACES / DLRM_DIR
    if not d.is_dir() or not INVENTORY.is_file():
        pytest.skip(f"{d} not found")
    inv = json.loads(INVENTORY.read_text())
    trace = stepscope.load(d, use_cache=False)
    assert trace.rank_ids == list(range(8))
    assert {r.world_size for r in trace.ranks} == {8}
    assert not [x for x in trace.diagnostics if x.severity == "error"]
    for info in trace.ranks:
        rel = str(info.source).split("traces/", 1)[1]
        kernels = int((trace.kind_mask(EventKind.KERNEL) & trace.rank_mask(info.rank)).sum())
        assert kernels == inv[rel]["features"]["kernels"], rel
        assert inv[rel]["distributedInfo"]["rank"] == info.rank
