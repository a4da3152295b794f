"""However a file is cut into chunks and however many processes decode them, the Trace is the same:
every table row for row, with string columns compared as the strings they name (the pool's order
follows the chunks)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.ingest.readers import kineto, kineto_chunks
from stepscope.ingest.readers.jsonscan import event_separator
from stepscope.ingest.transfer import HandoverSlots, PackedTables
from stepscope.model.schema import TABLE_SCHEMAS
from stepscope.model.trace import Trace

DEFAULT = Path(stepscope.__file__).parent / "data" / "default_trace.pt.trace.json.gz"
#: columns holding string ids (written out here rather than taken from the code under test)
STRING_COLUMNS = {"events": {"name", "cat", "input_dims", "input_types", "concrete_inputs", "call_stack", "coll_name",
                             "coll_dtype", "pg_name", "pg_desc", "pg_ranks"},
                  "tracks": {"pid", "tid", "name"}, "counters": {"name"}, "flows": {"cat"}}


def _table_values(trace: Trace, name: str) -> dict[str, list[object]]:
    table = getattr(trace, name)
    strings = STRING_COLUMNS.get(name, set())
    out: dict[str, list[object]] = {}
    for col in table:
        values = table[col]
        if col in strings:
            out[col] = list(trace.strings.decode(values))
        elif values.dtype.kind == "f":
            out[col] = np.where(np.isnan(values), -12345.0, values).tolist()
        else:
            out[col] = values.tolist()
    return out


def _chunks(path: Path) -> int:
    _head, at, _bare = kineto_chunks.locate_events(str(path))
    if kineto_chunks.is_gzip(str(path)):
        return len(list(kineto_chunks.iter_gzip_chunks(0, str(path), at, False)))
    return len(list(kineto_chunks.iter_plain(0, str(path), path.stat().st_size, at, False)))


def test_a_file_whose_first_events_are_laid_out_apart_is_still_cut_all_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``stepscope run`` writes its counter samples compactly before Kineto's own indented events."""
    compact = [f'{{"ph":"C","name":"c","pid":1,"tid":0,"ts":{i},"args":{{"value":1}}}}' for i in range(50)]
    kineto = [f'{{\n    "ph": "X", "cat": "cpu_op", "name": "op{i % 7}", "pid": 1, "tid": 1, "ts": {100 + i},'
              ' "dur": 1\n  }' for i in range(3000)]
    text = '{"traceEvents": [\n' + ",\n".join(compact) + ",\n  " + ",\n  ".join(kineto) + "\n]}"
    path = tmp_path / "t.json"
    path.write_text(text)
    _head, at, _bare = kineto_chunks.locate_events(str(path))
    sep = event_separator(text.encode()[at:at + (1 << 20)])
    assert sep is not None and sep.search(b'"dur": 1\n  },\n  {') and sep.search(b'{"value":1}},\n{')
    monkeypatch.setattr(kineto_chunks, "CHUNK_BYTES", 16 << 10)
    jobs = list(kineto_chunks.iter_plain(0, str(path), path.stat().st_size, at, False))
    assert len(jobs) >= len(text) // (16 << 10) - 1  # cut all through the indented part too
    assert all(text[job.start] == "{" for job in jobs[1:])  # every cut at the start of an event
    whole = stepscope.load(path, use_cache=False, workers=1)
    assert len(whole.events) == 3000 and len(whole.counters) == 50


@pytest.mark.parametrize(("plain", "by_slot"), [(False, True), (True, True), (True, False)])
def test_small_chunks_on_two_processes_equal_one_chunk_in_process(tmp_path: Path, plain: bool, by_slot: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Results come back through the shared handover slots, or by pipe where a slot is too small."""
    from_slot: list[int] = []
    collect = HandoverSlots.collect

    def spy(self: HandoverSlots, packed: PackedTables) -> PackedTables:
        from_slot.append(packed.slot >= 0)
        return collect(self, packed)

    monkeypatch.setattr(HandoverSlots, "collect", spy)
    if not by_slot:
        monkeypatch.setattr(kineto, "HANDOVER_SLOT_BYTES", 64)
    path = DEFAULT
    if plain:  # plain files are cut by byte range, gzip ones while inflating: both paths
        path = tmp_path / "t.json"
        with gzip.open(DEFAULT) as fh:
            path.write_bytes(fh.read())
    monkeypatch.setattr(kineto_chunks, "CHUNK_BYTES", 1 << 30)
    whole = stepscope.load(path, use_cache=False, workers=1)
    monkeypatch.setattr(kineto_chunks, "CHUNK_BYTES", 96 << 10)  # dozens of chunks
    assert _chunks(path) > 20
    cut = stepscope.load(path, use_cache=False, workers=2)
    assert len(whole.events) > 10_000
    assert (whole.events["input_dims"] >= 0).sum() > 1000  # string args are there to compare
    for name in TABLE_SCHEMAS:
        assert _table_values(cut, name) == _table_values(whole, name), name
    assert sorted(whole.strings.strings) == sorted(cut.strings.strings)
    assert whole.diagnostics == cut.diagnostics
    assert len(from_slot) == _chunks(path)
    assert sum(from_slot) == (len(from_slot) if by_slot else 0)


@pytest.mark.parametrize("gz", [False, True])
def test_events_array_after_a_header_bigger_than_the_first_read(tmp_path: Path, gz: bool) -> None:
    """The first look at a file reads 2 MiB; a longer header before "traceEvents" is read in full."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5}
              for i in range(3)]
    doc = {"note": "x" * (3 << 20), "traceEvents": events}
    raw = json.dumps(doc).encode()
    assert raw.index(b'"traceEvents"') > kineto_chunks.FIRST_HEAD_BYTES
    path = tmp_path / ("big_header.json.gz" if gz else "big_header.json")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    trace = stepscope.load(str(path), use_cache=False)
    assert sorted(trace.strings.decode(trace.events["name"])) == ["op0", "op1", "op2"]


def test_results_go_by_pipe_where_shared_memory_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise OSError("no shared memory here")

    monkeypatch.setattr(HandoverSlots, "__init__", refuse)
    monkeypatch.setattr(kineto_chunks, "CHUNK_BYTES", 256 << 10)
    got = stepscope.load(DEFAULT, use_cache=False, workers=2)
    want = stepscope.load(DEFAULT, use_cache=False, workers=1)
    assert len(got.events) == len(want.events) > 10_000
    assert _table_values(got, "events") == _table_values(want, "events")
