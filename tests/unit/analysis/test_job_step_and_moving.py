"""The job's step (the slowest rank's mean window, not the mean of per-step maxima) and the cluster's
per-step imbalance (the busiest rank may change from step to step), on hand-made numbers."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.analysis.arrivals import job_mean_step_ns, job_steps_ns
from stepscope.analysis.stragglers import ClusterRecord, combine_cluster

MS = 1_000_000


def test_the_job_step_counts_a_delay_once() -> None:
    """Rank 0 checkpoints at the end of steps 2 and 4 (40, 85, 40, 85 ms: 250 ms for 4 steps); rank 1
    waits for it at the start of steps 1 and 3 (82, 49, 75, 40: 246 ms). The job runs at 62.5 ms a step
    (250 / 4), rank 0's windows; the mean of the per-step maxima (82, 85, 75, 85) would be 81.75."""
    r0 = np.array([40, 85, 40, 85], np.int64) * MS
    r1 = np.array([82, 49, 75, 40], np.int64) * MS
    assert job_steps_ns([r0, r1]).tolist() == r0.tolist()
    assert job_mean_step_ns([r1, r0]) == 62.5 * MS
    assert job_mean_step_ns([r0, r1, np.zeros(0, np.int64)]) == 62.5 * MS  # a rank without steps is left out
    # only the steps every rank has: rank 1's fifth step (200 ms) does not count
    assert job_mean_step_ns([r0, np.append(r1, 200 * MS)]) == 62.5 * MS


def _record(host_ms: list[float], varying_pct: float) -> ClusterRecord:
    host = np.array(host_ms, np.float64) * MS
    metrics = {"kernel_count": 0.0, "compute_ns": 0.0, "host_ns": float(host.mean()), "step_ns": 300.0 * MS,
               "comm_ns": 0.0, "wait_ns": 0.0, "transfer_ns": 0.0, "varying_shapes_pct": varying_pct}
    return ClusterRecord(metrics, "min across ranks", {"host_ns": host.astype(np.int64)})


def test_the_busiest_rank_moving_from_step_to_step_is_an_imbalance_step_by_step() -> None:
    """Host work per step (sequence lengths 192/64, 64/192, 32/256, 256/64 tokens at 1 ms a token):
    rank 0 192, 64, 32, 256 (mean 136), rank 1 64, 192, 256, 64 (mean 144). Per step the busiest − the mean:
    64, 64, 112, 96 → 84 ms, the busiest ranks 0, 1, 1, 0; mean work 140 → 60 %. On the averages it is
    (144 − 140) / 140 = 2.9 %."""
    c = combine_cluster({0: _record([192, 64, 32, 256], 31.0), 1: _record([64, 192, 256, 64], 30.0)})
    assert c.imbalance_of == "host" and c.per_step and c.varying_shapes_pct == 31.0
    assert c.step_excess_ns.tolist() == [64 * MS, 64 * MS, 112 * MS, 96 * MS]
    assert c.busiest_per_step.tolist() == [0, 1, 1, 0]
    assert c.excess_ns == 84 * MS and c.imbalance_pct == pytest.approx(60.0)


def test_with_the_same_shapes_at_every_step_the_averages_are_compared() -> None:
    """The same per-step numbers with no varying shapes (3 ranks sharing 2 cores take turns being slow):
    the machine's noise, not the work's: (144 − 140) / 140 = 2.857 %, the excess 4 ms."""
    c = combine_cluster({0: _record([192, 64, 32, 256], 0.0), 1: _record([64, 192, 256, 64], 0.0)})
    assert not c.per_step and c.excess_ns == 4 * MS
    assert c.imbalance_pct == pytest.approx(100 * 4 / 140)
