"""Step of each event by time: the per-track cut (rows in sort order) against one search per row,
and hand-computed answers."""

from __future__ import annotations

import numpy as np

from stepscope.model import steps as step_links
from stepscope.model.schema import EVENT_COLUMNS, STEP_COLUMNS
from stepscope.model.table import Table


def _events(track: list[int], rank: list[int], ts: list[int]) -> Table:
    return Table(EVENT_COLUMNS, {"track": np.array(track, np.int32), "rank": np.array(rank, np.int32),
                                 "ts_ns": np.array(ts, np.int64)})


def _steps(rank: list[int], step: list[int], start: list[int], end: list[int]) -> Table:
    return Table(STEP_COLUMNS, {"rank": np.array(rank, np.int32), "step": np.array(step, np.int32),
                                "start_ns": np.array(start, np.int64), "host_end_ns": np.array(end, np.int64),
                                "end_ns": np.array(end, np.int64)})


STEPS = _steps(rank=[0, 0, 0, 1], step=[1, 2, 3, 7], start=[10, 20, 20, 100], end=[20, 25, 40, 200])


def test_step_by_time_by_hand() -> None:
    # track 0 and 1 on rank 0, track 2 on rank 1, track 3 on rank 2 (no steps); rows in (track, ts) order
    ev = _events(track=[0, 0, 0, 0, 0, 1, 1, 2, 2, 3],
                 rank=[0, 0, 0, 0, 0, 0, 0, 1, 1, 2],
                 ts=[5, 10, 19, 20, 45, 12, 39, 99, 150, 15])
    rows = np.arange(len(ev), dtype=np.int64)
    # two steps start at 20: the later listed (step 3) wins; 45 is past step 3's end; rank 2 has none
    want = [-1, 1, 1, 3, -1, 1, 3, -1, 7, -1]
    assert step_links._step_by_time(ev, rows, STEPS, STEPS["end_ns"]).tolist() == want
    assert step_links._last_step_started(ev, rows, STEPS) is not None  # the per-track cut was taken


def test_per_track_cut_equals_a_search_per_row() -> None:
    rng = np.random.default_rng(3)
    n_tracks, per_track = 7, 400
    track = np.repeat(np.arange(n_tracks), per_track)
    rank = (track // 3).astype(np.int32)  # ranks 0, 1, 2 (rank 2: one track)
    ts = np.concatenate([np.sort(rng.integers(0, 1000, per_track)) for _ in range(n_tracks)])
    ev = _events(track.tolist(), rank.tolist(), ts.tolist())
    starts = np.sort(rng.integers(-50, 1100, 12))
    steps = _steps(rank=[0] * 6 + [1] * 6, step=list(range(12)), start=starts[:6].tolist() + starts[6:].tolist(),
                   end=(starts + 80).tolist())
    rows = np.sort(rng.choice(len(ev), 1500, replace=False)).astype(np.int64)
    cut = step_links._last_step_started(ev, rows, steps)
    assert cut is not None
    np.testing.assert_array_equal(cut, step_links._last_step_started_by_search(ev, rows, steps))
    assert (cut >= 0).sum() > 500 and (cut == -1).any()


def test_rows_out_of_order_take_the_search() -> None:
    ev = _events(track=[0, 0, 0], rank=[0, 0, 0], ts=[30, 12, 21])
    rows = np.arange(3, dtype=np.int64)
    assert step_links._last_step_started(ev, rows, STEPS) is None
    assert step_links._step_by_time(ev, rows, STEPS, STEPS["end_ns"]).tolist() == [3, 1, 3]
