"""One registry entry per analysis: name, function, result class and JSON keys, and the typed
accessors that read results with it."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.bundle import RankResults, analyze
from stepscope.analysis.registry import (
    CLUSTER,
    CLUSTER_ANALYSES,
    KERNELS,
    OVERVIEW,
    RANK_ANALYSES,
    SUMMARY,
    RankAnalysis,
)
from stepscope.analysis.summary import Summary
from stepscope.report.json_out import CLUSTER_SECTIONS, RANK_SECTIONS
from stepscope.report.views import CLUSTER_RENDERERS, RENDERERS
from tests.builders import TraceBuilder


def test_one_entry_per_analysis_whose_result_class_is_what_its_function_returns() -> None:
    entries = [*RANK_ANALYSES, *CLUSTER_ANALYSES]
    assert len({e.name for e in entries}) == len(entries)
    for e in entries:
        fn = e.compute if isinstance(e, RankAnalysis) else e.combine  # a cluster analysis: its cross-rank step
        returned = typing.get_type_hints(inspect.unwrap(fn))["return"]
        assert returned is e.result, f"{e.name}: {fn.__name__} returns {returned}, the entry says {e.result}"


def test_the_json_document_and_the_terminal_have_a_place_for_every_analysis() -> None:
    rank_keys = {k for a in RANK_ANALYSES for k in a.json_keys}
    assert rank_keys | {"device", "platform"} == set(RANK_SECTIONS)
    assert {k for c in CLUSTER_ANALYSES for k in c.json_keys} <= set(CLUSTER_SECTIONS)
    assert [a.name for a in RANK_ANALYSES] == list(RENDERERS)
    assert [c.name for c in CLUSTER_ANALYSES] == list(CLUSTER_RENDERERS)


def test_typed_accessors(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.step(1, ts=0, dur=100)
    b.launch_kernel("k", launch_ts=2, launch_dur=1, ts=10, dur=10)
    bundle = analyze(b.load(tmp_path), names=["summary"])
    rr = bundle.rank(0)
    assert isinstance(rr.get(SUMMARY), Summary) and rr.require(SUMMARY) is rr.get(SUMMARY)
    assert rr.get(KERNELS) is None
    with pytest.raises(NotApplicable, match="the kernels analysis did not run"):
        rr.require(KERNELS)
    assert bundle.cluster_result(CLUSTER) is None
    with pytest.raises(NotApplicable, match="single-rank"):
        analyze(bundle.trace).require_cluster(CLUSTER)
    wrong = RankResults(0, {"overview": rr.require(SUMMARY)})
    with pytest.raises(TypeError, match="overview result is a Summary"):
        wrong.get(OVERVIEW)
