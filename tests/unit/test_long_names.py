"""One event with a name of many MB (issue 21: a 200 MB name took minutes in the regexes of the
analyses, hours in the terminal, 12 GB in ``diff``): classifiers see a bounded prefix, the model and
``--json`` keep the whole name, the terminal and the HTML page show its head and tail."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from stepscope.compare.align import align, group_by_key
from stepscope.model.strings import MATCH_PREFIX, StringPool
from stepscope.report.fmt import TEXT_LIMIT
from stepscope.server.standalone import embed_json
from tests.builders import TraceBuilder
from tests.unit.ingest.test_bad_input import run_main

MB = 1 << 20
LONG = "void sgemm_" + "x" * (8 * MB)  # main: 36 s for `analyze` of a trace holding it (≈4.5 s/MB)


def test_mask_and_map_see_a_bounded_prefix_of_each_string() -> None:
    pool = StringPool(["short", LONG, "x" * MATCH_PREFIX])
    seen: list[int] = []
    mask = pool.mask(lambda s: seen.append(len(s)) is None and s.startswith("void sgemm"))
    assert seen == [5, MATCH_PREFIX, MATCH_PREFIX]
    assert mask.tolist() == [False, True, False, False]
    assert pool.map(len).tolist() == [5, MATCH_PREFIX, MATCH_PREFIX, -1]
    assert pool[1] == LONG  # the full name stays


def test_a_remembered_mask_was_made_from_the_bounded_prefix() -> None:
    """The per-predicate memo of :meth:`StringPool.mask` keeps the cap: the first call sees the cut
    strings, the second is answered from the memo, a pickled pool cuts them again."""
    import pickle

    seen: list[int] = []

    def is_gemm(s: str) -> bool:
        seen.append(len(s))
        return s.startswith("void sgemm")

    pool = StringPool(["short", LONG])
    assert pool.mask(is_gemm).tolist() == [False, True, False]
    assert pool.mask(is_gemm).tolist() == [False, True, False]
    assert seen == [5, MATCH_PREFIX]
    again = pickle.loads(pickle.dumps(pool))
    assert again.mask(is_gemm).tolist() == [False, True, False]
    assert seen == [5, MATCH_PREFIX] * 2 and again[1] == LONG


def test_mask_follows_a_growing_pool() -> None:
    pool = StringPool(["a"])
    assert pool.mask(lambda s: s == "a").tolist() == [True, False]
    pool.intern(LONG)
    pool.intern("a2")
    assert pool.mask(lambda s: s.startswith("a")).tolist() == [True, False, True, False]


def _trace_with_long_names(tmp_path: Path) -> Path:
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.op("aten::mm", 5, 50)
    b.launch_kernel(LONG, 10, 2, 20, 5)
    b.launch_kernel("ampere_h16816gemm_128x128", 12, 2, 30, 5)
    b.op("aten::" + "z" * (4 * MB), 60, 10)
    return b.write(tmp_path / "long.json")


def test_analyze_with_a_multi_mb_name_is_fast_and_keeps_the_full_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _trace_with_long_names(tmp_path)
    t0 = time.perf_counter()
    res = run_main(["analyze", "--no-cache", str(path)], capsys)
    seconds = time.perf_counter() - t0
    assert res.returncode == 0, res.stderr
    assert seconds < 15, f"analyze took {seconds:.1f} s"
    assert len(res.stdout) < 200_000, "the terminal shows the head and tail of a long name, not all of it"
    assert "characters) …" in res.stdout
    res = run_main(["analyze", "--no-cache", "--json", str(path)], capsys)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) and f'"{LONG}"' in res.stdout  # the document keeps the whole name


def test_html_text_is_bounded() -> None:
    """The standalone page embeds at most TEXT_LIMIT characters of one text (head and tail)."""
    page_text = json.loads(embed_json({"name": "<" + "y" * (3 * TEXT_LIMIT)}))["name"]
    assert len(page_text) < TEXT_LIMIT + 100 and page_text.startswith("<yyy") and "characters) …" in page_text
    assert embed_json({"k": "<b>"}) == '{"k":"\\u003cb\\u003e"}'


def test_diff_alignment_of_a_long_key_takes_memory_of_its_length_only() -> None:
    """Fixed-width ``str`` arrays took 4 bytes per character of the longest key for every key."""
    keys = np.array([LONG[: 2 * MB]] + [f"k{i}" for i in range(200)], dtype=object)
    tracemalloc.start()
    try:
        uniq, _rows, (sums,) = group_by_key(keys, np.ones(len(keys)))
        al = align(uniq, uniq[::-1].copy())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(uniq) == 201 and sums.sum() == 201 and bool(al.matched.all())
    assert peak < 64 * MB, f"peak {peak / MB:.0f} MB"
