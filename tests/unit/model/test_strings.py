"""``StringPool.intern_many`` / ``id_map``: known strings keep their ids, new ones are added once, in order."""

from __future__ import annotations

from stepscope.model.strings import StringPool


def test_intern_many_adds_new_strings_once_in_first_seen_order() -> None:
    pool = StringPool(["a", "b"])
    assert pool.intern_many(["b", "c", "a", "c", "d"]).tolist() == [1, 2, 0, 2, 3]
    assert pool.strings == ["a", "b", "c", "d"]
    assert pool.intern_many([]).tolist() == []


def test_id_map_translates_another_pools_ids_and_keeps_minus_one() -> None:
    pool = StringPool(["x"])
    other = StringPool(["y", "x", "z"])
    ids = pool.id_map(other.strings)
    assert ids.tolist() == [1, 0, 2, -1]
    assert [pool[i] for i in ids[[0, 1, 2]].tolist()] == ["y", "x", "z"]


def test_a_pool_made_from_strings_with_repeats_keeps_each_first_id() -> None:
    pool = StringPool(["a", "b", "a", "c", "b"])
    assert pool.strings == ["a", "b", "c"]
    assert [pool.find(s) for s in "abc"] == [0, 1, 2]
    assert pool.intern("d") == 3


def test_a_pool_made_from_distinct_strings_holds_them_in_order() -> None:
    pool = StringPool(iter(["q", "", "p"]))
    assert pool.strings == ["q", "", "p"]
    assert pool.find("") == 1 and pool.find("p") == 2 and pool.find("zz") == -1


def test_mask_scans_the_strings_once_per_predicate_until_the_pool_grows() -> None:
    import pickle

    calls: list[str] = []

    def is_gemm(s: str) -> bool:
        calls.append(s)
        return "gemm" in s

    pool = StringPool(["sgemm", "relu"])
    first = pool.mask(is_gemm)
    first[1] = True  # a caller's copy: the remembered mask is not touched
    assert pool.mask(is_gemm).tolist() == [True, False, False]
    assert calls == ["sgemm", "relu"]  # the second call was remembered
    pool.intern("hgemm")
    assert pool.mask(is_gemm).tolist() == [True, False, True, False]  # the pool grew: scanned again
    assert len(calls) == 5
    again = pickle.loads(pickle.dumps(pool))
    assert again.mask(is_gemm).tolist() == [True, False, True, False]
