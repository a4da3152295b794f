"""The per-field column converters of the Kineto reader (``kineto_values`` / ``kineto_columns``) and
``events_to_columns`` end to end on a hand-written chunk, every expected value computed by hand."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from stepscope.ingest.normalize import Lut
from stepscope.ingest.readers import interning, kineto_columns
from stepscope.ingest.readers.interning import first_rows, intern_ids, intern_strings, raw_ids, relabel
from stepscope.ingest.readers.kineto_columns import _dim3, arg_column, events_to_columns, phase_codes
from stepscope.ingest.readers.kineto_decode import FAST_DECODER, ChunkColumns
from stepscope.ingest.readers.kineto_values import dur_ns_of, floats_of, flow_ids, ints_of, ts_to_ns

NAN = float("nan")


def _read(convert: Any, values: list[Any]) -> tuple[npt.NDArray[Any], list[int]]:
    """``convert`` (ints_of / floats_of) over ``values``, and how often it read them again (the
    lenient fallback)."""
    agains: list[int] = []

    def again() -> list[Any]:
        agains.append(1)
        return list(values)

    return convert(iter(values), len(values), again), agains


def _ints(values: list[Any]) -> tuple[npt.NDArray[Any], list[int]]:
    return _read(ints_of, values)


def _floats(values: list[Any]) -> tuple[npt.NDArray[Any], list[int]]:
    return _read(floats_of, values)


# ---- kineto_values -------------------------------------------------------------------------------

def test_ints_of_plain_ints_take_the_fast_path() -> None:
    got, agains = _ints([5, -1, 0, 2**63 - 1, -(2**63)])
    assert got.dtype == np.int64
    assert got.tolist() == [5, -1, 0, 2**63 - 1, -(2**63)]
    assert agains == []


@pytest.mark.parametrize(("values", "expected"), [
    (["12", 3], [12, 3]),  # integer text is parsed
    ([1, " 12 ", "abc"], [1, 12, -1]),  # junk text → -1, the other values kept
    ([7, 2**63, 8], [7, -1, 8]),  # beyond int64 → -1 only for that value
    ([2**64, -(2**63) - 1], [-1, -1]),
    (["1.5", 4], [-1, 4]),  # not an integer
    (["abc"], [-1]),
])
def test_ints_of_lenient_values(values: list[Any], expected: list[int]) -> None:
    got, _ = _ints(values)
    assert got.dtype == np.int64
    assert got.tolist() == expected


def test_ints_of_reads_again_on_junk() -> None:
    got, agains = _ints([1, "abc", 3])
    assert got.tolist() == [1, -1, 3]
    assert agains == [1]


def test_floats_of_fast_path_and_fallback() -> None:
    got, agains = _floats([1.5, -2.0, 0.0])
    assert got.tolist() == [1.5, -2.0, 0.0]
    assert got.dtype == np.float64
    assert agains == []
    got, _ = _floats([1.5, "2.25", 3])
    assert got.tolist() == [1.5, 2.25, 3.0]
    got, agains = _floats([1.5, "abc", 4.0, None])
    assert got[[0, 2]].tolist() == [1.5, 4.0]
    assert np.isnan(got[1]) and np.isnan(got[3])
    assert agains == [1]
    got, _ = _floats([NAN, NAN])
    assert got.shape == (2,) and np.isnan(got).all()


def test_dur_ns_of_rounds_and_marks_non_finite() -> None:
    durs = [2.0, 10.5, 0.0015, 1.0006, 1.0004, 0.25, float("inf"), NAN, float("-inf"), 3]
    got = dur_ns_of(iter(durs), len(durs))
    assert got.dtype == np.int64
    # 0.0015 µs = 1.5 ns → 2; non-finite → -1 µs = -1000 ns
    assert got.tolist() == [2000, 10500, 2, 1001, 1000, 250, -1000, -1000, -1000, 3000]


def test_dur_ns_of_1_0005_us() -> None:
    """The float 1.0005 is 1.000499999999999944… µs, i.e. just under 1000.5 ns: 1000 ns is its nearest ns."""
    assert dur_ns_of(iter([1.0005]), 1).tolist() == [1000]


def test_dur_ns_of_huge_is_capped_not_wrapped() -> None:
    got = dur_ns_of(iter([1e20, -1e20]), 2)
    assert got[0] > 24 * 3600 * 10**9  # far above the 24 h limit, positive (no int64 wrap-around)
    assert got[1] < 0


@pytest.mark.parametrize(("ids", "expected"), [
    ([None, 5, None, 0], [-1, 5, -1, 0]),
    ([None, None, None], [-1, -1, -1]),
    ([3, "7", "abc", 4], [3, -1, -1, 4]),  # text ids → -1
    ([True, 2, False], [-1, 2, -1]),  # a bool is not an id
    ([1, 2**63, None, 3], [1, -1, -1, 3]),  # beyond int64: only that id is -1
    ([2**64, 9], [-1, 9]),
    ([-5, 2**63 - 1], [-5, 2**63 - 1]),
    ([], []),
])
def test_flow_ids(ids: list[Any], expected: list[int]) -> None:
    got = flow_ids(ids)
    assert got.dtype == np.int64
    assert got.tolist() == expected


# ---- kineto_columns helpers ----------------------------------------------------------------------

def test_intern_strings_ids_are_table_positions_in_first_seen_order() -> None:
    table: dict[str, int] = {}
    got = intern_strings(["b", None, "a", "b", "c", None, "a"], table)
    assert got.dtype == np.int32
    assert got.tolist() == [0, -1, 1, 0, 2, -1, 1]
    assert table == {"b": 0, "a": 1, "c": 2}
    assert list(table) == ["b", "a", "c"]


def test_intern_strings_extends_an_existing_table() -> None:
    table = {"x": 0, "a": 1}
    got = intern_strings(["a", "new", "x", "new", ""], table)
    assert got.tolist() == [1, 2, 0, 2, 3]
    assert table == {"x": 0, "a": 1, "new": 2, "": 3}
    assert intern_strings([None, None], table).tolist() == [-1, -1]
    assert len(table) == 4  # None adds nothing


def intern_raw(values: list[msgspec.Raw], table: dict[str, int], compact: bool = False,
               unquote: bool = False) -> npt.NDArray[np.int32]:
    """Raw args as the column reader hands them to ``raw_ids``: their JSON text as bytes."""
    return raw_ids(list(map(b"".__add__, values)), len(values), table, compact, unquote)


def test_intern_raw_absent_and_plain() -> None:
    table = {"pre": 0}
    vals = [msgspec.Raw(b"[[1, 2]]"), msgspec.Raw(), msgspec.Raw(b"[[1, 2]]"), msgspec.Raw(b'"float"')]
    got = intern_raw(vals, table)
    assert got.dtype == np.int32
    assert got.tolist() == [1, -1, 1, 2]
    assert table == {"pre": 0, "[[1, 2]]": 1, '"float"': 2}  # text kept as written without compact/unquote


def test_intern_raw_compact_merges_formatting() -> None:
    table: dict[str, int] = {}
    vals = [msgspec.Raw(b"[[1, 2], []]"), msgspec.Raw(b"[[1,2],[]]"), msgspec.Raw(b"[ [1,\n 2] , [ ] ]"),
            msgspec.Raw(), msgspec.Raw(b"[[3]]")]
    got = intern_raw(vals, table, compact=True)
    assert got.tolist() == [0, 0, 0, -1, 1]
    assert table == {"[[1,2],[]]": 0, "[[3]]": 1}


def test_intern_raw_unquote() -> None:
    table: dict[str, int] = {}
    vals = [msgspec.Raw(b'"[0, 1]"'), msgspec.Raw(b"[0, 1]"), msgspec.Raw(b'"a\\"b"'), msgspec.Raw(b"[2]")]
    got = intern_raw(vals, table, unquote=True)
    # the JSON string "[0, 1]" and the list [0, 1] have the same text once unquoted
    assert got.tolist() == [0, 0, 1, 2]
    assert table == {"[0, 1]": 0, 'a"b': 1, "[2]": 2}


def test_intern_raw_again_in_a_new_chunk_gives_the_same_texts() -> None:
    vals = [msgspec.Raw(b'""'), msgspec.Raw(), msgspec.Raw(b"[ 5 ]"), msgspec.Raw(b'"x"')]
    for _ in range(2):  # the second chunk finds each text made already, and must store the same
        quoted: dict[str, int] = {}
        assert intern_raw(vals, quoted, unquote=True).tolist() == [0, -1, 1, 2]
        assert quoted == {"": 0, "[ 5 ]": 1, "x": 2}
        compact: dict[str, int] = {"pre": 0}
        assert intern_raw(vals, compact, compact=True).tolist() == [1, -1, 2, 3]
        assert compact == {"pre": 0, '""': 1, "[5]": 2, '"x"': 3}


def test_remembered_raw_texts_start_over_past_their_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interning, "RAW_MEMO_LIMIT", 2)
    monkeypatch.setitem(interning._RAW_TEXTS, (True, False), {})
    known = interning._RAW_TEXTS[(True, False)]
    first = [msgspec.Raw(f"[{i}]".encode()) for i in range(4)]
    assert intern_raw(first, {}, compact=True).tolist() == [0, 1, 2, 3]
    assert len(known) == 4
    table: dict[str, int] = {}
    assert intern_raw([msgspec.Raw(b"[ 9 ]"), msgspec.Raw(b"[1]")], table, compact=True).tolist() == [0, 1]
    assert table == {"[9]": 0, "[1]": 1} and set(known) == {b"[ 9 ]", b"[1]"}


def test_dim3() -> None:
    got = _dim3([[4, 2, 1], None, [1, 2], "1,2,3", [1, 2, 3, 4], [], [128, 1, 1]])
    assert got.dtype == np.int64
    assert got.tolist() == [[4, 2, 1], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [128, 1, 1]]
    assert _dim3([None, None]).tolist() == [[0, 0, 0], [0, 0, 0]]
    assert _dim3([]).shape == (0, 3)


def test_dim3_of_three_item_lists_only() -> None:
    assert _dim3([[4, 2, 1], [128, 1, 1], [1, 1, 64]]).tolist() == [[4, 2, 1], [128, 1, 1], [1, 1, 64]]
    assert _dim3([[1, 2, 3], [1, 2**64, 1]]).tolist() == [[1, 2, 3], [0, 0, 0]]  # too big: that row only
    assert _dim3([[1, 2, 3], [1, [2], 3]]).tolist() == [[1, 2, 3], [0, 0, 0]]


def test_dim3_int_beyond_int64_only_zeroes_its_row() -> None:
    got = _dim3([[1, 2, 3], [2**63, 1, 1], None, [7, 8, 9], [1, 10**25, 1]])
    assert got.tolist() == [[1, 2, 3], [0, 0, 0], [0, 0, 0], [7, 8, 9], [0, 0, 0]]


def test_first_rows_and_relabel_give_each_value_its_id() -> None:
    values = ["b", "a", "b", None, "c", "a"]
    first, rows = first_rows(iter(values), len(values))
    assert list(first.items()) == [("b", 0), ("a", 1), (None, 3), ("c", 4)]
    assert rows.tolist() == [0, 1, 0, 3, 4, 1]
    assert relabel(first, rows, [10, 11, -1, 12]).tolist() == [10, 11, 10, -1, 12, 11]


def test_intern_strings_reads_an_iterator_of_n_values() -> None:
    table = {"a": 0}
    assert intern_strings(iter(["z", "a", None, "z"]), table, 4).tolist() == [1, 0, -1, 1]
    assert table == {"a": 0, "z": 1}


def testintern_ids_by_text() -> None:
    table = {"X": 0}
    got = intern_ids(iter([7, "7", 8, "stream 7", 7, 0]), table, 6)
    assert got.dtype == np.int32
    assert got.tolist() == [1, 1, 2, 3, 1, 4]
    assert table == {"X": 0, "7": 1, "8": 2, "stream 7": 3, "0": 4}


# ---- events_to_columns end to end ----------------------------------------------------------------

CHUNK = b"""[
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": "7", "ts": 100, "dur": 10.5,
  "args": {"External id": 11, "Input Dims": [[2, 3], [3, 4]], "Call stack": "a.py(1): f", "Ignored": 1}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 7, "ts": 120.25, "dur": 2,
  "args": {"External id": "12", "Input Dims": [[2,3],[3,4]], "Sequence number": 5}},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 130, "dur": 5,
  "args": {"External id": 11, "correlation": 99, "grid": [4, 2, 1], "block": [128, 1, 1], "stream": 7}},
 {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 140, "s": "t",
  "args": {"Bytes": 4096, "Total Allocated": 8192, "Device Id": 0}},
 {"ph": "f", "cat": "ac2g", "name": "ac2g", "pid": 7, "tid": 7, "ts": 141, "id": 99, "bp": "e"},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 90, "dur": 60},
 {"ph": "X", "cat": "cpu_op", "name": "aten::old", "pid": 7, "tid": 7, "ts": 95, "dur": 1,
  "args": {"external id": 13, "Input dims": [[5]]}}
]"""
N = 7


@pytest.fixture(scope="module")
def chunk() -> ChunkColumns:
    dropped = [("event-wrong-type", "example")]
    out = events_to_columns(FAST_DECODER.decode(CHUNK), dropped)
    assert out.dropped is dropped
    return out


def _texts(c: ChunkColumns, ids: npt.NDArray[Any]) -> list[str | None]:
    return [c.strings[i] if i >= 0 else None for i in ids.tolist()]


def _arg(c: ChunkColumns, name: str) -> list[Any]:
    col = arg_column(c.cols, name, c.n)
    assert len(col) == N
    return col.tolist()


def test_events_to_columns_event_fields(chunk: ChunkColumns) -> None:
    c = chunk
    assert c.n == N
    assert c.cols["ts_ns"].dtype == np.int64
    assert c.cols["ts_ns"].tolist() == [100_000, 120_250, 130_000, 140_000, 141_000, 90_000, 95_000]
    assert c.cols["ts_ok"].tolist() == [True] * N
    assert c.cols["dur_ns"].dtype == np.int64
    assert c.cols["dur_ns"].tolist() == [10_500, 2_000, 5_000, -1000, -1000, 60_000, 1_000]  # no dur → -1 µs
    assert _texts(c, c.cols["name"]) == ["aten::mm", "aten::add", "gemm", "[memory]", "ac2g", "ProfilerStep#1",
                                         "aten::old"]
    assert [chr(code) for code in c.cols["ph"].tolist()] == ["X", "X", "X", "i", "f", "X", "X"]
    assert _texts(c, c.cols["cat"]) == ["cpu_op", "cpu_op", "kernel", "cpu_instant_event", "ac2g",
                                        "user_annotation", "cpu_op"]
    assert c.cols["flow_id"].tolist() == [-1, -1, -1, -1, 99, -1, -1]


def test_events_to_columns_pid_tid_by_text(chunk: ChunkColumns) -> None:
    c = chunk
    assert _texts(c, c.cols["pid"]) == ["7", "7", "0", "7", "7", "7", "7"]
    assert _texts(c, c.cols["tid"]) == ["7", "7", "stream 7", "7", "7", "7", "7"]
    # pid 7, tid "7" and tid 7 are one string
    assert c.cols["pid"][0] == c.cols["tid"][0] == c.cols["tid"][1]
    assert len(set(c.strings)) == len(c.strings)  # each string once in the chunk's table


def test_events_to_columns_op_and_kernel_args(chunk: ChunkColumns) -> None:
    c = chunk
    assert _arg(c, "ext_id") == [11, 12, 11, -1, -1, -1, 13]  # "12" parsed; old "external id" used when new absent
    assert "ext_id_old" not in c.cols
    assert _arg(c, "corr") == [-1, -1, 99, -1, -1, -1, -1]
    assert _arg(c, "seq") == [-1, 5, -1, -1, -1, -1, -1]
    assert _arg(c, "stream") == [-1, -1, 7, -1, -1, -1, -1]
    assert [_arg(c, f"grid_{a}")[2] for a in "xyz"] == [4, 2, 1]
    assert [_arg(c, f"block_{a}")[2] for a in "xyz"] == [128, 1, 1]
    for axis in "xyz":
        for dim in ("grid", "block"):
            col = _arg(c, f"{dim}_{axis}")
            assert col[:2] + col[3:] == [0] * (N - 1), (dim, axis)
    assert _texts(c, arg_column(c.cols, "call_stack", N)) == ["a.py(1): f", None, None, None, None, None, None]
    dims = "[[2,3],[3,4]]"  # both spellings, compacted to one text
    assert _texts(c, arg_column(c.cols, "input_dims", N)) == [dims, dims, None, None, None, None, "[[5]]"]
    assert "input_dims_old" not in c.cols
    occ = arg_column(c.cols, "occupancy_pct", N)
    assert occ.dtype == np.float64 and np.isnan(occ).all()


def test_events_to_columns_memory_args(chunk: ChunkColumns) -> None:
    c = chunk
    assert _arg(c, "mem_bytes") == [0, 0, 0, 4096, 0, 0, 0]
    assert _arg(c, "total_allocated") == [-1, -1, -1, 8192, -1, -1, -1]
    assert _arg(c, "mem_device") == [-1, -1, -1, 0, -1, -1, -1]
    assert _arg(c, "total_reserved") == [-1] * N  # absent everywhere


def test_events_to_columns_empty() -> None:
    out = events_to_columns([], [])
    assert out.n == 0
    assert out.cols == {}
    assert out.strings == []


def test_events_to_columns_huge_ids_and_text_numbers() -> None:
    body = (b'[{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "id": 1'
            + b"0" * 19 + b', "args": {"correlation": "42", "grid": [1' + b"0" * 19 + b', 1, 1], "block": [2, 2, 2]}},'
            b' {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 2, "ts": 2, "dur": 1, "id": 5,'
            b' "args": {"correlation": 1' + b"0" * 19 + b', "grid": [3, 3, 3], "block": [4, 4, 4]}}]')
    c = events_to_columns(FAST_DECODER.decode(body), [])
    assert c.cols["flow_id"].tolist() == [-1, -1]  # ids are read from flow events only
    assert arg_column(c.cols, "corr", 2).tolist() == [42, -1]
    assert [arg_column(c.cols, f"grid_{a}", 2).tolist() for a in "xyz"] == [[0, 3], [0, 3], [0, 3]]
    assert [arg_column(c.cols, f"block_{a}", 2).tolist() for a in "xyz"] == [[2, 4], [2, 4], [2, 4]]


def test_phase_codes_fast_and_odd_phases() -> None:
    assert phase_codes(["X", "i", "C"]).tolist() == [88, 105, 67]
    # an empty or multi-letter phase (not Kineto's own) goes through the per-distinct-text path
    assert phase_codes(["X", "", "XY", "X"]).tolist() == [88, 0, 88, 88]


def test_flow_ids_of_flow_events_huge_ones_absent() -> None:
    body = (b'[{"ph": "s", "cat": "ac2g", "name": "f", "pid": 1, "tid": 2, "ts": 1, "id": 1' + b"0" * 19 + b'},'
            b' {"ph": "f", "cat": "ac2g", "name": "f", "pid": 1, "tid": 2, "ts": 2, "id": 5, "bp": "e"},'
            b' {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 2, "ts": 3, "dur": 1},'
            b' {"ph": "t", "cat": "ac2g", "name": "f", "pid": 1, "tid": 2, "ts": 4, "id": "7"}]')
    c = events_to_columns(FAST_DECODER.decode(body), [])
    assert c.cols["flow_id"].tolist() == [-1, 5, -1, -1]  # 10**19 > int64 and text: absent


def test_lut_remembers_values_and_classifies_new_strings_once() -> None:
    calls: list[str] = []

    def kind(s: str) -> int:
        calls.append(s)
        return len(s)

    lut = Lut(kind, np.int32, missing=-7)
    assert lut.table(["a", "bbb"]).tolist() == [1, 3, -7]
    assert lut.table(["bbb", "cc", "a"]).tolist() == [3, 2, 1, -7]
    assert calls == ["a", "bbb", "cc"]


# ---- repeated values read once per distinct key --------------------------------------------------

def _kernel(i: int, grid: str, regs: str, stream: int) -> str:
    return (f'{{"ph": "X", "cat": "kernel", "name": "k{i % 3}", "pid": 0, "tid": "stream {stream}", "ts": {i},'
            f' "dur": 1, "args": {{"correlation": {i}, "grid": {grid}, "block": [128, 1, 1], "registers per thread":'
            f' {regs}, "shared memory": {i % 2 * 1024}, "stream": {stream}, "est. achieved occupancy %": 50}}}}')


def _op(i: int, dims: str, stack: str) -> str:
    return (f'{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": {7 + i % 2}, "ts": {i}, "dur": 1,'
            f' "args": {{"External id": {i}, "Input Dims": {dims}, "Input type": ["float", ""], "Call stack":'
            f' {stack}, "Sequence number": {i}}}}}')


REPEATS = ("[" + ",".join(
    [_kernel(i, g, r, s) for i, (g, r, s) in enumerate(
        [("[4, 2, 1]", "32", 7), ("[4, 2, 1]", "32", 7), ('"1,2,3"', '"32"', 7), ("[1, 2]", "32", 8),
         ("null", '"x"', 7), ("[4,2,1]", "32", 7), ("[8, 1, 1]", "64", 8)])]
    + [_op(i, d, c) for i, (d, c) in enumerate(
        [("[[2, 3]]", '"a.py(1): f"'), ("[[2,3]]", '"a.py(1): f"'), ("[[2, 3]]", '"b.py(2): g"'),
         ("[]", "null"), ("[[2, 3]]", '"a.py(1): f"')])]) + "]").encode()


def test_repeated_args_read_per_distinct_key_equal_reading_each_event() -> None:
    """Args keyed per event (``_store_repeated``) give the columns and the string table that reading
    every field of every event on its own gives, odd values (text numbers, junk, short grids) included."""
    evs = FAST_DECODER.decode(REPEATS)
    cols = events_to_columns(evs, [])
    groups = kineto_columns.event_groups(cols.cols["ph"], cols.cols["cat"], cols.cols["name"], cols.strings)
    args = [e.args for e in evs]
    keyed: dict[str, int] = {}
    got = kineto_columns.args_columns(args, groups, keyed)
    each: dict[str, int] = {}
    want = kineto_columns._LazyCols(len(evs))
    for group, idx in groups.items():
        if len(idx):
            for f in kineto_columns.GROUP_FIELDS[group]:
                kineto_columns._store(want, f, tuple(args[i] for i in idx.tolist()), idx, each)
    for new, old in (("ext_id", "ext_id_old"), ("input_dims", "input_dims_old")):
        want[new] = np.where(want[new] >= 0, want[new], want.pop(old))
    assert keyed == each
    assert sorted(got) == sorted(want)
    for name in got:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert [got[f"grid_{a}"][:7].tolist() for a in "xyz"] == [[4, 4, 0, 0, 0, 4, 8], [2, 2, 0, 0, 0, 2, 1],
                                                                 [1, 1, 0, 0, 0, 1, 1]]
    assert got["regs"][:7].tolist() == [32, 32, 32, 32, -1, 32, 64]
    assert got["stream"][:7].tolist() == [7, 7, 7, 8, 7, 7, 8]
    dims = [_text_of(keyed, i) for i in got["input_dims"][7:].tolist()]
    assert dims == ["[[2,3]]", "[[2,3]]", "[[2,3]]", "[]", "[[2,3]]"]


def _text_of(table: dict[str, int], i: int) -> str | None:
    return None if i < 0 else next(s for s, j in table.items() if j == i)


def test_identity_columns_equal_interning_each_column_on_its_own() -> None:
    evs = FAST_DECODER.decode(REPEATS)
    table: dict[str, int] = {}
    got = kineto_columns.identity_columns(evs, table)
    alone: dict[str, int] = {}
    want = {"ph": phase_codes([e.ph for e in evs]),
            "cat": intern_strings([e.cat for e in evs], alone), "name": intern_strings([e.name for e in evs], alone),
            "pid": intern_ids((e.pid for e in evs), alone, len(evs)),
            "tid": intern_ids((e.tid for e in evs), alone, len(evs))}
    assert table == alone
    for name, col in want.items():
        assert got[name].tolist() == col.tolist(), name
    assert got["tid"].tolist()[7:] == [table["7"], table["8"]] * 2 + [table["7"]]


@pytest.mark.parametrize(("ts", "ns", "ok"), [
    ([1, [1, 2]], [1000, 0], [True, False]),
    ([[1, 2], [3, 4]], [0, 0], [False, False]),  # lists of one length: not a 2-D "column"
    (["1.5", [1]], [1500, 0], [True, False]),
    (["1.5", {"a": 1}], [1500, 0], [True, False]),
    ([2**63, 1], [0, 1000], [False, True]),  # ns beyond int64: invalid, not wrapped
    ([2**70, 1], [0, 1000], [False, True]),
    ([10**400, "2"], [0, 2000], [False, True]),
    ([9 * 10**15, 7], [0, 7000], [False, True]),
])
def test_ts_to_ns_of_lists_objects_and_huge_ints_is_invalid_not_a_crash(ts: list[Any], ns: list[int],
                                                                        ok: list[bool]) -> None:
    """Issue 21: ``ts`` given as a list or an object raised ValueError in ``np.array``."""
    got_ns, got_ok, _ = ts_to_ns(ts)
    assert got_ok.tolist() == ok
    assert got_ns[got_ok].tolist() == [v for v, k in zip(ns, ok) if k]
