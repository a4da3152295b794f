"""Hostile Kineto JSON (issue 21): values that crashed the reader, and silent repairs that must be
counted. Every input is hand-made and small, written to ``tmp_path``."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import stepscope
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder, dumps


def _counts(trace: Trace) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in trace.diagnostics:
        out[d.name] = out.get(d.name, 0) + d.count
    return out


@pytest.mark.parametrize("rank", [2**31, 2**40, 2**63, -(2**63) - 1])
def test_rank_beyond_int32_is_reported_and_the_file_name_used(tmp_path: Path, rank: int) -> None:
    """``distributedInfo.rank`` of 2^40 / 2^63 raised OverflowError in ``build._offset``."""
    b = TraceBuilder(rank=rank, world_size=2)
    b.op("a", 0, 5)
    trace = stepscope.load(b.write(tmp_path / "worker3.json"), use_cache=False)
    assert trace.rank_ids == [3]
    assert _counts(trace).get("rank-out-of-range") == 1


def test_absurd_rank_in_a_file_name_falls_back_to_the_file_order(tmp_path: Path) -> None:
    b = TraceBuilder(device=None)
    b.op("a", 0, 5)
    trace = stepscope.load(b.write(tmp_path / f"rank{'9' * 200}.json"), use_cache=False)
    assert trace.rank_ids == [0]


def test_a_huge_world_size_counts_the_missing_ranks_without_listing_them(tmp_path: Path) -> None:
    """world_size 2^20 (the largest taken) with two rank files: the missing ranks are counted, not
    enumerated; 2^63 is no world size at all (reported once per file, ignored)."""
    for world, want in ((2**20, {"ranks-missing": 2**20 - 2}), (2**63, {"world-size-invalid": 2})):
        run = tmp_path / f"run{world}"
        run.mkdir()
        for r in (0, 1):
            b = TraceBuilder(rank=r, world_size=world)
            b.op("a", 0, 5)
            b.write(run / f"worker{r}.json")
        trace = stepscope.load(run, use_cache=False)
        assert trace.rank_ids == [0, 1]
        assert _counts(trace) == want
    missing = [d for d in stepscope.load(tmp_path / f"run{2**20}", use_cache=False).diagnostics
               if d.name == "ranks-missing"]
    assert "missing 2, 3, 4" in missing[0].example


# ---- what follows the document: reported, never silent -------------------------------------------

def _doc(*names: str) -> bytes:
    b = TraceBuilder()
    b.step(1, 0, 100)
    for i, name in enumerate(names):
        b.op(name, 10 + i, 1)
    return dumps(b.document()).encode()


def _load_bytes(tmp_path: Path, name: str, data: bytes) -> Trace:
    path = tmp_path / name
    path.write_bytes(data)
    return stepscope.load(path, use_cache=False)


def _names(trace: Trace) -> set[str]:
    return set(trace.names(trace.events["name"]).tolist())


def test_trailing_garbage_after_the_document_is_reported(tmp_path: Path) -> None:
    trace = _load_bytes(tmp_path, "t.json", _doc("a") + b"\nGARBAGE{{")
    assert _names(trace) == {"ProfilerStep#1", "a"}
    assert _counts(trace) == {"trailing-data": 1}


def test_a_second_concatenated_document_is_read_and_reported_with_its_events(tmp_path: Path) -> None:
    """Issue 21: a second document after the first was dropped (115 of 230 events read). It holds
    2 events (its ProfilerStep#1, identical to the first document's and so read once, and
    "second"): both are read and the report says 2 events."""
    trace = _load_bytes(tmp_path, "t.json", _doc("a") + b"\n" + _doc("second"))
    assert _names(trace) == {"ProfilerStep#1", "a", "second"}
    assert len(trace.events) == 3
    assert _counts(trace) == {"document-appended": 2, "duplicate-events": 1}
    appended = next(d for d in trace.diagnostics if d.name == "document-appended")
    assert "its 2 events were read" in appended.example


def test_a_trace_written_twice_into_one_file_is_read_once(tmp_path: Path) -> None:
    doc = _doc("a", "b")
    trace = _load_bytes(tmp_path, "t.json.gz", gzip.compress(doc + doc))
    assert len(trace.events) == 3
    assert _counts(trace) == {"document-appended": 3, "duplicate-events": 3}


def test_list_form_documents_concatenated_are_read(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("a", 10, 1)
    first = dumps(b.events).encode()
    b.events = [b.events[0] | {"name": "c"}]
    trace = _load_bytes(tmp_path, "t.json", first + dumps(b.events).encode())
    assert _names(trace) == {"a", "c"}
    assert _counts(trace) == {"document-appended": 1}


def test_junk_after_a_list_form_document_is_reported(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("a", 10, 1)
    trace = _load_bytes(tmp_path, "t.json", dumps(b.events).encode() + b" GARBAGE")
    assert _names(trace) == {"a"}
    assert _counts(trace) == {"trailing-data": 1}


def test_gzip_with_a_junk_tail_is_read_like_gzip_d_and_reported(tmp_path: Path) -> None:
    """It was refused ("not a readable gzip file"); ``gzip -d`` decompresses it and warns."""
    trace = _load_bytes(tmp_path, "t.json.gz", gzip.compress(_doc("a")) + b"junk tail bytes")
    assert _names(trace) == {"ProfilerStep#1", "a"}
    assert _counts(trace) == {"gzip-trailing-data": 1}


def test_gzip_of_several_members_reads_them_all(tmp_path: Path) -> None:
    """The members of one document (``cat a.gz b.gz``): all read, like ``gzip -d``."""
    doc = _doc("a", "b")
    cut = doc.index(b'"name": "b"')
    trace = _load_bytes(tmp_path, "t.json.gz", gzip.compress(doc[:cut]) + gzip.compress(doc[cut:]))
    assert _names(trace) == {"ProfilerStep#1", "a", "b"}
    assert _counts(trace) == {}


def test_a_well_formed_document_has_no_trailing_report(tmp_path: Path) -> None:
    assert _counts(_load_bytes(tmp_path, "t.json", _doc("a") + b"\n\n")) == {}


# ---- exact duplicates: read once, counted --------------------------------------------------------

def test_exact_duplicate_events_are_read_once_and_counted(tmp_path: Path) -> None:
    """Issue 21: an event written twice (same name, ts, dur, track and args) was counted twice
    without a word. Here ``aten::mm`` [10, 15] appears three times and its kernel twice: 2 + 1
    copies dropped; ``aten::mm`` [20, 25] differs in its External id and ``aten::mm`` [10, 15] on
    another thread in its track, so both stay."""
    b = TraceBuilder()
    b.step(1, 0, 100)
    mm = b.op("aten::mm", 10, 5, **{"External id": 1})
    b.add(**mm)
    b.add(**mm)
    b.op("aten::mm", 10, 5, tid=200, **{"External id": 1})
    b.op("aten::mm", 20, 5, **{"External id": 2})
    _rt, k = b.launch_kernel("sgemm", launch_ts=11, launch_dur=2, ts=30, dur=10)
    b.add(**k)
    trace = stepscope.load(b.write(tmp_path / "t.json"), use_cache=False)
    names = trace.names(trace.events["name"]).tolist()
    assert names.count("aten::mm") == 3
    assert names.count("sgemm") == 1
    assert _counts(trace) == {"duplicate-events": 3}
    kernel = trace.events["kind"] == 6
    assert int(trace.events["dur_ns"][kernel].sum()) == 10_000


def test_events_equal_in_time_but_not_in_name_are_kept(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("a", 10, 5)
    b.op("b", 10, 5)
    b.op("a", 10, 5, cat="user_annotation")
    trace = stepscope.load(b.write(tmp_path / "t.json"), use_cache=False)
    assert len(trace.events) == 3 and _counts(trace) == {}


def test_a_lone_surrogate_in_the_metadata_is_replaced_and_the_trace_cached(tmp_path: Path) -> None:
    """Fuzzing (issue 21): ``"\\ud800"`` in a top-level key after a damaged trailer reached the rank's
    metadata through the lenient decoder, and saving the cache entry raised UnicodeEncodeError."""
    b = TraceBuilder()
    b.op("a", 10, 1)
    doc = dumps(b.document()).encode()
    damaged = doc[:-1] + b', "traceName": "run\\ud800"} ]'  # a trailer msgspec refuses
    path = tmp_path / "t.json"
    path.write_bytes(damaged)
    trace = stepscope.load(path)  # with the cache
    assert trace.ranks[0].metadata.get("traceName") == "run?"
    assert _names(stepscope.load(path)) == {"a"}  # read back from the cache


@pytest.mark.parametrize("world", ["x", [2], 0, -4, 2**40, True])
def test_a_world_size_that_is_no_size_is_reported_and_ignored(tmp_path: Path, world: object) -> None:
    """``distributedInfo.world_size`` of text reached ``list(range(world))`` in comm_links (fuzz case
    4,741: TypeError); 2^40 would have built a list of 2^40 ranks."""
    b = TraceBuilder(rank=0, world_size=2)
    b.meta["distributedInfo"]["world_size"] = world
    b.step(1, 0, 100)
    b.op("a", 10, 5)
    trace = stepscope.load(b.write(tmp_path / "t.json"), use_cache=False)
    assert trace.rank_info(0).world_size is None
    assert _counts(trace) == {"world-size-invalid": 1}


def _deflate_damaged_for_isal(data: bytes) -> bytes:
    """``data`` gzipped with one byte of its deflate stream changed so that ISA-L raises its own
    ``IsalError`` ("Invalid deflate block"), not zlib's error."""
    from isal import igzip, igzip_lib

    packed = gzip.compress(data, compresslevel=6)
    for at in range(len(packed) * 4 // 5, len(packed) - 8):  # late in the stream: past what the sniffing reads
        damaged = packed[:at] + bytes([packed[at] ^ 0xFF]) + packed[at + 1:]
        try:
            igzip.decompress(damaged)
        except igzip_lib.IsalError:
            return damaged
        except Exception:  # another damage: try the next byte
            continue
    raise AssertionError("no byte gives IsalError")


def test_a_deflate_block_isal_rejects_is_salvaged_not_a_crash(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Fuzz case 4,627: ISA-L's ``IsalError`` (from ``isal.igzip_lib``, not ``isal.igzip``) escaped
    the fast reader's fallback to zlib: a traceback. Now the zlib path goes on, salvages what it can
    and says so, or refuses the file in one line."""
    pytest.importorskip("isal")
    from stepscope.cli import main

    b = TraceBuilder()
    b.step(1, 0, 200_000)
    for i in range(40_000):  # ~5 MB of JSON: the damage lies past the first chunks the reader sniffs
        b.op(f"op{i % 7}_{(i * 2654435761) % 1000003}", 10 + i * 4, 3)
    path = tmp_path / "t.json.gz"
    path.write_bytes(_deflate_damaged_for_isal(dumps(b.document()).encode()))
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(path), "--no-cache"])
    err = capsys.readouterr().err
    assert exc.value.code in (0, None, 2) and "Traceback" not in err
    if exc.value.code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("stepscope: error:")


@pytest.mark.parametrize("dims", [[[2**70, 4]], [[10**10, 10**10, 10**10]], [[-1, 4]], [[True, 2]]])
def test_input_dims_past_int64_are_no_crash(tmp_path: Path, dims: list[list[int]]) -> None:
    """A collective whose ``Input Dims`` held 2^70 crashed the communication sizes (OverflowError
    mapping the element count into int64); the analyses and the advisor now run to the end, the
    sizes read as unknown or capped (analysis/dims.py)."""
    from stepscope.advisor.engine import run_advisor
    from stepscope.analysis.bundle import analyze
    from stepscope.analysis.comm import classify

    b = TraceBuilder()
    b.step(1, ts=0, dur=1000)
    for i, (op, kernel) in enumerate((("nccl:all_reduce", "ncclKernel_AllReduce_RING_LL_Sum_float"),
                                      ("aten::mul", "vectorized_elementwise_kernel"),
                                      ("aten::add", "vectorized_elementwise_kernel"))):
        b.op(op, 10 + 50 * i, 20, **{"Input Dims": dims})
        b.launch_kernel(kernel, 12 + 50 * i, 5, 300 + 60 * i, 50)
    trace = stepscope.load(b.write(tmp_path / "t.json"), use_cache=False)
    sizes = classify(trace).in_bytes
    assert (sizes >= -1).all() and (sizes < 2**63).all()
    advice = run_advisor(analyze(trace))
    assert not [n for n in advice.not_run if n.reason.startswith("internal error")]
