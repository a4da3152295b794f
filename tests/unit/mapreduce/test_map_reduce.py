"""The map-reduce path on hand-made runs: per-rank records and their match by hand, the same document
as the whole-model path, and a driver that never holds a rank's events."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.advisor.engine import advise
from stepscope.analysis.bundle import Memo, analyze
from stepscope.analysis.comm_records import comm_records, match_records
from stepscope.analysis.platform import uses_pytorch
from stepscope.errors import UsageError
from stepscope.mapreduce import driver, worker
from stepscope.mapreduce.driver import map_reduce, wants_map_reduce
from stepscope.model.trace import Trace
from stepscope.report import json_out
from stepscope.report.advice_json import finding_dict
from tests.builders import TraceBuilder

US = 1000
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"


def write_run(tmp_path: Path, kernels: int = 1) -> Path:
    """Three ranks, one step [0, 100] µs each, two all-reduces per rank (the second ending at 95):

    rank 0: compute [0, 10], all-reduces [30, 50] and [80, 95]; rank 1: ``kernels`` compute kernels
    over [0, 60], all-reduces [60, 70] (10 µs) and [90, 95] (5 µs); rank 2: compute [0, 12],
    all-reduces [40, 70] and [85, 95]. The first all-reduce is the same collective on every rank
    (transfer = min 20, 10, 30 = 10 µs), the second too (min 15, 5, 10 = 5 µs). Waits: rank 0
    10 + 10 = 20 µs, rank 1 0, rank 2 20 + 5 = 25 µs.
    """
    run = tmp_path / "run"
    run.mkdir(parents=True)
    plans = [([(0, 10)], [(30, 20), (80, 15)]), ([(60 * i / kernels, 60 / kernels) for i in range(kernels)],
                                                  [(60, 10), (90, 5)]), ([(0, 12)], [(40, 30), (85, 10)])]
    for rank, (compute, comms) in enumerate(plans):
        b = TraceBuilder(rank=rank, world_size=3)
        b.step(1, ts=0, dur=100)
        for i, (ts, dur) in enumerate(compute):
            b.launch_kernel(f"k{i % 5}", launch_ts=0, launch_dur=0.5, ts=ts, dur=dur)
        for ts, dur in comms:
            b.launch_kernel(NCCL, launch_ts=1, launch_dur=1, ts=ts, dur=dur, stream=20)
        b.write(run / f"worker{rank}.1.pt.trace.json")
    return run


def whole_document(path: Path) -> dict[str, object]:
    bundle = analyze(stepscope.load(path))
    return json_out.to_json(bundle, [finding_dict(f) for f in advise(bundle)])


def test_records_and_their_match_by_hand(tmp_path: Path) -> None:
    trace = stepscope.load(write_run(tmp_path))
    recs = {r: comm_records(trace, r) for r in trace.rank_ids}
    assert recs[1].dur_ns.tolist() == [10 * US, 5 * US] and recs[1].nth.tolist() == [0, 1]
    assert recs[1].ts_ns.tolist() == [60 * US, 90 * US]
    m = match_records(recs)
    assert m.method == "min across ranks"
    assert {r: t.tolist() for r, t in m.transfer_ns.items()} == {r: [10 * US, 5 * US] for r in (0, 1, 2)}
    assert {r: s.tolist() for r, s in m.seen.items()} == {r: [3, 3] for r in (0, 1, 2)}
    one = match_records({0: recs[0]})  # one rank: the same (group, type, size) across steps; both sizes unknown
    assert one.method == "same size across steps" and one.transfer_ns[0].tolist() == [15 * US, 15 * US]


def test_same_document_as_the_whole_model_and_the_waits_by_hand(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    mr = map_reduce(run, measure=True, workers=2)
    assert mr.document == whole_document(run)
    cluster = mr.document["cluster"]
    assert [r["wait_ms"] for r in cluster["ranks"]] == [0.020, 0.0, 0.025]
    assert [r["distributed"]["wait_ms"] for r in mr.document["ranks"]] == [0.020, 0.0, 0.025]
    assert cluster["wait_method"] == "min across ranks"


def test_rank_selection_and_no_cache(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    mr = map_reduce(run, ranks=[0, 2], use_cache=False)
    bundle = analyze(stepscope.load(run, ranks=[0, 2], use_cache=False))
    assert mr.document == json_out.to_json(bundle, [finding_dict(f) for f in advise(bundle)])
    with pytest.raises(UsageError, match="none of the ranks"):
        map_reduce(run, ranks=[7])


def test_the_driver_holds_summaries_never_a_ranks_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the workers do, the driver process itself builds, reads and keeps no Trace with events:
    the functions that make one are replaced by tripwires before the workers are forked from it, and
    the workers (forked earlier) use their own copies (``workers=1``)."""
    run = write_run(tmp_path)
    made: list[str] = []

    def tripwire(name: str):  # type: ignore[no-untyped-def]
        real = getattr(worker, name) if name == "load_rank_file" else stepscope.ingest.build_trace

        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            made.append(name)
            return real(*args, **kwargs)
        return call

    pool_made = driver.fork_pool

    def fork_then_arm(*args, **kwargs):  # type: ignore[no-untyped-def]
        pool = pool_made(*args, **kwargs)  # workers forked with the real functions
        monkeypatch.setattr(worker, "load_rank_file", tripwire("load_rank_file"))
        monkeypatch.setattr(stepscope.ingest, "build_trace", tripwire("build_trace"))
        return pool

    def traces() -> set[int]:  # the Traces with events alive in this process (other tests' too)
        gc.collect()
        return {id(o) for o in gc.get_objects() if type(o) is Trace and len(o.events)}

    monkeypatch.setattr(driver, "fork_pool", fork_then_arm)
    before = traces()
    mr = map_reduce(run, workers=1)
    assert made == []  # the driver read no rank
    assert traces() - before == set()
    assert len(mr.document["ranks"]) == 3


def test_summary_size_does_not_grow_with_events(tmp_path: Path) -> None:
    small = map_reduce(write_run(tmp_path / "a", kernels=10), measure=True).summary_bytes
    large = map_reduce(write_run(tmp_path / "b", kernels=2000), measure=True).summary_bytes
    assert large[1] < 1.1 * small[1]  # 200x the events on rank 1, the same five names
    assert max(large.values()) < 64 << 10


def test_seeded_memo_gives_a_one_rank_trace_the_jobs_facts(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.launch_kernel("k", launch_ts=0, launch_dur=1, ts=2, dur=3)
    trace = b.load(tmp_path)
    memo = Memo()
    memo.seed(uses_pytorch, trace, True)
    with memo.active():
        assert uses_pytorch(trace) is True
    assert uses_pytorch(trace) is False


def test_when_the_path_is_taken(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    assert not wants_map_reduce(run)  # 3 files, a few kB
    assert wants_map_reduce(run, choice=True)
    assert not wants_map_reduce(run / "worker0.1.pt.trace.json")
    assert np.all([wants_map_reduce(run, choice=c) is c for c in (True, False)])


def test_a_views_rank_is_loaded_alone_from_the_cache(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    mr = map_reduce(run)
    one = driver.load_rank(mr, 1)
    assert one.rank_ids == [1]
    whole = stepscope.load(run)
    sl = whole.rank_slice(1)
    assert len(one.events) == sl.stop - sl.start
    assert np.array_equal(one.events["ts_ns"], whole.events["ts_ns"][sl])


def test_the_streamed_text_is_the_documents_json(tmp_path: Path) -> None:
    import io
    import json

    for run in (write_run(tmp_path), tmp_path / "run" / "worker1.1.pt.trace.json"):
        mr = map_reduce(run)
        buf = io.StringIO()
        mr.write_json(buf.write)
        assert buf.getvalue() == json.dumps(mr.document, indent=2, allow_nan=False) + "\n"
        assert mr.document == whole_document(run)


def test_a_packed_object_is_reindented_as_json_dumps_writes_it() -> None:
    """The streamed document re-indents each rank's compact JSON with msgspec's formatter: the same text
    as ``json.dumps(indent=2)`` one level deep, for every kind of token."""
    import json

    obj = {"empty": [], "none": {}, "nested": [[], {}, [1, [2.5, [3e-07]]]], "text": 'é\u2028\n\t"<x>', "neg": -0.0,
           "big": 1.5e300, "null": None, "flag": True, "": "", "deep": {"a": {"b": [{"c": []}]}}}
    assert worker.indented(worker.pack(obj)) == json.dumps(obj, indent=2).replace("\n", "\n    ")


def test_map_two_opens_map_ones_cache_entry_without_hashing_the_file_again(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank file is hashed once (map 1); map 2 gets the key and reads the entry, and gives the summary
    it gives when it hashes the file itself."""
    from stepscope import ingest
    from stepscope.analysis.comm_records import match_records as match

    run = write_run(tmp_path)
    hashed: list[str] = []
    real = ingest.content_key
    monkeypatch.setattr(ingest, "content_key", lambda files, extra: hashed.append(files[0]) or real(files, extra))
    task = worker.RankFile(str(run / "worker1.1.pt.trace.json"), 1, str(run), "", str(tmp_path / "cache"))
    facts = worker.scan_rank(task)
    assert len(hashed) == 1 and facts.key == real([task.file], "rank-file|1|")
    m = match({facts.rank: facts.collectives})
    job = worker.JobFacts(m.transfer_ns[1], m.seen[1], m.method, facts.pytorch, facts.compiled)
    keyed = worker.summarize_rank(dataclasses.replace(task, key=facts.key), job)
    assert len(hashed) == 1  # not hashed again
    plain = worker.summarize_rank(task, job)
    assert len(hashed) == 2
    assert worker.unpack(keyed.section) == worker.unpack(plain.section) and keyed.advice == plain.advice
