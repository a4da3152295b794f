"""Real traces whose correlation ids were taken out of the args, kept only in their flow events,
give the same document as the traces themselves: the launch links come from the flows alone
(model/flow_links.py), zero-length calls beside the launches included (DLRM's cudaPeekAtLastError)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from stepscope import load
from stepscope.analysis.bundle import analyze
from stepscope.cli.analyze_cmd import findings_for
from stepscope.model.trace import Trace
from stepscope.report.advice_json import finding_dict
from stepscope.report.json_out import to_json

TRACES = ["kineto_tb_plugin/resnet50_num_workers_0", "param_dlrm/dlrm_8rank_v100", "hta/nccl_resnet_a100_rank0_of2"]


def _copy(src: Path, dst: Path, drop_correlation: bool) -> tuple[Path, int]:
    """The run's trace files as plain JSON under ``dst``; with the ``correlation`` arg of every
    complete event removed when asked (how many: the second value)."""
    dst.mkdir(parents=True)
    removed = 0
    for f in sorted(p for p in src.iterdir() if ".json" in p.name):
        raw = f.read_bytes()
        doc: Any = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        for e in doc["traceEvents"]:
            args = e.get("args")
            if drop_correlation and e.get("ph") == "X" and isinstance(args, dict) and "correlation" in args:
                del args["correlation"]
                removed += 1
        (dst / f.name.replace(".gz", "")).write_text(json.dumps(doc))
    return dst, removed


def _document(trace: Trace) -> dict[str, Any]:
    bundle = analyze(trace)
    with bundle.memo.active():
        doc: dict[str, Any] = json.loads(json.dumps(to_json(bundle, [finding_dict(f) for f in findings_for(bundle)]),
                                                    default=str))
    return doc


@pytest.mark.parametrize("rel", TRACES)
def test_flows_alone_link_the_launches(shared_traces: Path, tmp_path: Path, rel: str) -> None:
    as_is, _ = _copy(shared_traces / rel, tmp_path / "as_is", drop_correlation=False)
    only_flows, removed = _copy(shared_traces / rel, tmp_path / "flows", drop_correlation=True)
    same, flows = load(as_is, use_cache=False), load(only_flows, use_cache=False)
    assert removed > 1000  # the ids are gone from the args ...
    assert (flows.events["launch"] == same.events["launch"]).all()  # ... and every launch link found again
    linked = sum(d.count for d in flows.diagnostics if d.name == "launch-linked-by-flow")
    assert linked == int((same.events["launch"][same.gpu_mask()] >= 0).sum()) > 0  # and said
    want, got = _document(same), _document(flows)
    got.pop("diagnostics"), want.pop("diagnostics")
    want.pop("source"), got.pop("source")
    assert got == want
