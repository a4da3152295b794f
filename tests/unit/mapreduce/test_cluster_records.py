"""Arrivals and slow links on the map-reduce path: each rank's record alone (pickled, as a map worker
sends it) gives the cross-rank answer, the records hold no events, and the job's verdict and the
straggler finding come out of the reduce step the same as on the whole model. The runs are the
hand-made ones of tests/unit/analysis/test_arrivals.py (numbers worked out there by hand)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from stepscope.advisor.engine import advise
from stepscope.analysis.arrivals import compute_arrivals
from stepscope.analysis.bundle import analyze
from stepscope.analysis.registry import ALL_TO_ALL, ARRIVALS, CLUSTER_ANALYSES, PIPELINE, SLOW_LINKS
from stepscope.mapreduce.driver import map_reduce
from stepscope.model.trace import Trace
from stepscope.report import json_out
from stepscope.report.advice_json import finding_dict
from tests.unit.analysis.test_arrivals import US, late_start, planted_compute, slow_link


def _records(trace: Trace, name: str) -> dict[int, object]:
    entry = next(c for c in CLUSTER_ANALYSES if c.name == name)
    return {r: pickle.loads(pickle.dumps(entry.per_rank(trace, r))) for r in trace.rank_ids}


def test_arrivals_from_each_ranks_pickled_record(tmp_path: Path) -> None:
    trace = planted_compute(tmp_path)
    records = _records(trace, "arrivals")
    # 2 steps x 2 all-reduces a rank: 4 collectives, a few hundred bytes each, no events
    assert {r: len(rec) for r, rec in records.items()} == {0: 4, 1: 4, 2: 4, 3: 4}  # type: ignore[arg-type]
    assert max(len(pickle.dumps(rec)) for rec in records.values()) < 4096
    a, whole = ARRIVALS.combine(records), compute_arrivals(trace)
    assert a.culprits == (3,) and a.culprit_cause == {3: "compute"} and a.victims == (0, 1, 2)
    assert int(a.late_ns[a.ranks.index(3)]) == 10_000 * US  # 5 ms late at all-reduce 1, both steps
    assert np.array_equal(a.late_ns, whole.late_ns) and np.array_equal(a.wait_total_ns, whole.wait_total_ns)


def test_the_slow_link_from_each_ranks_pickled_record(tmp_path: Path) -> None:
    trace = slow_link(tmp_path)
    links = SLOW_LINKS.combine(_records(trace, "slow_links"))
    assert [str(x) for x in links.slow.link] == ["group 2 (ranks 2, 3)"]
    assert int(links.rows.time_ns[list(map(str, links.rows.link)).index("group 2 (ranks 2, 3)")]) == 4000 * US


def _whole(trace: Trace) -> dict[str, object]:
    bundle = analyze(trace)
    return json_out.to_json(bundle, [finding_dict(f) for f in advise(bundle)])


def test_the_culprit_and_the_jobs_imbalance_come_out_of_the_reduce_step(tmp_path: Path) -> None:
    trace = planted_compute(tmp_path)
    doc = map_reduce(tmp_path / "run", use_cache=False).document
    assert doc == _whole(trace)
    job = doc["verdicts"][0]
    assert (job["rank"], job["bound"], job["ranks"], job["excess_pct"]) == (None, "imbalance", [3], 25.0)
    assert [f["rank"] for f in doc["findings"] if f["rule"] == "straggler-rank"] == [3]
    assert doc["cluster"]["arrivals"] and doc["cluster"]["slow_links"]


def test_the_waited_for_rank_sets_the_jobs_step_in_the_reduce_step(tmp_path: Path) -> None:
    trace = late_start(tmp_path)
    doc = map_reduce(tmp_path / "run", use_cache=False).document
    assert doc == _whole(trace)
    job = doc["verdicts"][0]
    assert (job["ranks"], job["set_by"], job["avg_step_ms"], job["job_step_ms"]) == ([2], "waited-for", 20.0, 20.0)
    assert (job["shares_rank"], job["shares_step_ms"]) == (2, 17.0)  # rank 2's own window, its shares'


def test_pipeline_bubbles_from_each_ranks_pickled_record_and_the_map_reduce_document(tmp_path: Path) -> None:
    """The hand-made GPipe run of tests/unit/analysis/test_pipeline.py: stage 1 busiest, its 7.5 ms bubble."""
    from tests.unit.analysis.test_pipeline import gpipe

    trace = gpipe(tmp_path)
    records = _records(trace, "pipeline")
    assert max(len(pickle.dumps(rec)) for rec in records.values()) < 4096
    p = PIPELINE.combine(records)
    assert p.stages.bubble_ns.tolist() == [9500 * US, 7500 * US, 9500 * US, 9500 * US]
    doc = map_reduce(tmp_path / "run", use_cache=False).document
    assert doc == _whole(trace)
    pipe = doc["cluster"]["pipeline"]
    assert pipe["pipelines"][0]["ranks"] == [0, 1, 2, 3] and pipe["pipelines"][0]["critical_bubble_ms"] == 7.5
    assert [s["bubble_ms"] for s in pipe["stages"]] == [9.5, 7.5, 9.5, 9.5]


def test_all_to_all_from_each_ranks_pickled_record_and_the_map_reduce_document(tmp_path: Path) -> None:
    """The hand-made MoE run of tests/unit/analysis/test_all_to_all.py: rank 3 receives 4x the median."""
    from tests.unit.analysis.test_all_to_all import moe

    trace = moe(tmp_path)
    records = _records(trace, "all_to_all")
    a = ALL_TO_ALL.combine(records)
    assert a.top_receivers == (3, 0, 1, 2)
    doc = map_reduce(tmp_path / "run", use_cache=False).document
    assert doc == _whole(trace)
    got = doc["cluster"]["all_to_all"]
    assert got["routed_in_spread"] == 4.0 and got["top_receivers"] == [3, 0, 1, 2]
    assert [r["time_ms"] for r in got["ranks"]] == [0.5, 0.5, 0.5, 1.1]


def test_the_markdown_report_names_the_critical_bubble_and_the_hot_expert_rank(tmp_path: Path) -> None:
    from stepscope.report.markdown import render_markdown
    from tests.unit.analysis.test_all_to_all import moe
    from tests.unit.analysis.test_pipeline import gpipe

    (tmp_path / "pp").mkdir()
    (tmp_path / "ep").mkdir()
    pp = render_markdown(_whole(gpipe(tmp_path / "pp")))
    assert "- pipeline 0 (ranks 0, 1, 2, 3): slowest stage 1, imbalance 11.5 %, its bubble 7.5 ms per step" in pp
    ep = render_markdown(_whole(moe(tmp_path / "ep")))
    assert "- all-to-all: time spread 2.20x, routed bytes spread 4.00x; most routed bytes received: ranks 3, 0" in ep
