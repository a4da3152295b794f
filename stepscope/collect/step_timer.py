"""Step timing by the IPS method: how fast a training loop runs, and how much of it waits for data.

For every step the timer records:

=================  ==========================================================================
``batch_cost_s``   wall time of the whole step: from the end of the previous step to the end
                   of this one, so the wait for this step's batch is included
``reader_cost_s``  the part of ``batch_cost_s`` spent waiting for the next batch
                   (inside ``next(loader)``)
``samples``        instances processed in the step (1 when the batch size is unknown)
``ips``            instances per second, ``samples / batch_cost_s``
=================  ==========================================================================

A loop whose ``reader_cost`` is a large share of ``batch_cost`` is input-bound: the model waits
for the data pipeline. The timer needs no torch; it works with any iterable and any clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


#: the unit when no batch size is known: each step counts once, and the rate is steps/s
STEPS = "steps"


@dataclass(frozen=True)
class StepRecord:
    """The timing of one step (see the module docstring for each field)."""

    step: int  # 0-based index of the step in the timer
    end_s: float  # the clock's value when the step ended
    batch_cost_s: float
    reader_cost_s: float
    samples: int

    @property
    def ips(self) -> float:
        """Instances per second in this step."""
        return self.samples / self.batch_cost_s if self.batch_cost_s > 0 else 0.0

    def to_dict(self) -> dict[str, float | int]:
        """The record as plain data (for JSON)."""
        return {
            "step": self.step,
            "end_s": self.end_s,
            "batch_cost_s": self.batch_cost_s,
            "reader_cost_s": self.reader_cost_s,
            "samples": self.samples,
            "ips": self.ips,
        }


@dataclass(frozen=True)
class StepSummary:
    """Timing over a run of steps: means of the costs and the overall instances per second."""

    steps: int
    samples: int
    mean_batch_cost_s: float
    mean_reader_cost_s: float
    ips: float  # total samples / total batch cost, not the mean of per-step ips

    @property
    def reader_pct(self) -> float:
        """Share of the step time spent waiting for data, in percent."""
        if self.mean_batch_cost_s <= 0:
            return 0.0
        return 100.0 * self.mean_reader_cost_s / self.mean_batch_cost_s

    def format(self, unit: str = "samples") -> str:
        """One log line: ``ips 812.3 samples/s | batch_cost 39.40 ms | reader_cost 25.30 ms (64%)``;
        with ``unit="steps"`` (the batch size is unknown) the rate is ``25.38 steps/s``."""
        rate = f"{self.ips:.2f} steps/s" if unit == STEPS else f"ips {self.ips:.1f} {unit}/s"
        return (
            f"{rate} | batch_cost {self.mean_batch_cost_s * 1e3:.2f} ms"
            f" | reader_cost {self.mean_reader_cost_s * 1e3:.2f} ms ({self.reader_pct:.0f}%)"
        )


def summarise_records(records: Sequence[StepRecord]) -> StepSummary:
    """Aggregate step records; an empty sequence gives an all-zero summary."""
    n = len(records)
    if n == 0:
        return StepSummary(0, 0, 0.0, 0.0, 0.0)
    total_batch = sum(r.batch_cost_s for r in records)
    total_reader = sum(r.reader_cost_s for r in records)
    samples = sum(r.samples for r in records)
    ips = samples / total_batch if total_batch > 0 else 0.0
    return StepSummary(n, samples, total_batch / n, total_reader / n, ips)


class StepTimer:
    """Times training steps and logs ``ips``, ``batch_cost`` and ``reader_cost`` every N steps.

    Typical use::

        timer = StepTimer(log_every=10, batch_size=64)
        for batch in timer.wrap(loader):   # times each next(loader) as reader cost
            train_step(batch)
            timer.step()                   # closes the step

    The first step starts at :meth:`start`, or at the first batch request when ``start`` was
    not called. ``records`` holds every step as data.

    Args:
        log_every: log the mean over the last ``log_every`` steps every that many steps (0: never).
        batch_size: instances per step, used when :meth:`step` gets no ``samples``.
        clock: seconds as a float; ``time.perf_counter`` by default (tests pass a fake one).
        log: where log lines go; the module logger at INFO level by default.
        unit: the instance unit in log lines (``samples``, ``images``, ``tokens`` ...); ignored without a
            batch size until :meth:`step` is given ``samples``: the rate is then steps/s, never samples/s.
    """

    def __init__(
        self,
        log_every: int = 10,
        batch_size: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
        log: Callable[[str], None] | None = None,
        unit: str = "samples",
    ) -> None:
        if log_every < 0:
            raise ValueError("log_every must be >= 0")
        self.log_every = log_every
        self.batch_size = batch_size
        self._unit = unit
        self._counted = batch_size is not None  # instances per step known: samples/s, else steps/s
        self._clock = clock
        self._log = log if log is not None else logger.info
        self._records: list[StepRecord] = []
        self._step_start: float | None = None
        self._reader_s = 0.0

    @property
    def unit(self) -> str:
        """The unit of the logged rate: the instance unit when instances are counted, else ``steps``."""
        return self._unit if self._counted else STEPS

    @property
    def records(self) -> tuple[StepRecord, ...]:
        """Every closed step, in order."""
        return tuple(self._records)

    def start(self) -> None:
        """Mark the start of the first step (no effect once started)."""
        if self._step_start is None:
            self._step_start = self._clock()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Count the time spent inside this block as reader cost of the current step."""
        t0 = self._clock()
        if self._step_start is None:
            self._step_start = t0
        try:
            yield
        finally:
            self._reader_s += self._clock() - t0

    def wrap(self, iterable: Iterable[T]) -> Iterator[T]:
        """Iterate ``iterable``, timing each ``next()`` as reader cost."""
        it = iter(iterable)
        while True:
            with self.reading():
                try:
                    item = next(it)
                except StopIteration:
                    return
            yield item

    def step(self, samples: int | None = None) -> StepRecord:
        """Close the current step and start the next; logs every ``log_every`` steps."""
        now = self._clock()
        start = self._step_start if self._step_start is not None else now
        self._counted = self._counted or samples is not None
        n = samples if samples is not None else (self.batch_size or 1)
        rec = StepRecord(len(self._records), now, now - start, self._reader_s, n)
        self._records.append(rec)
        self._step_start = now
        self._reader_s = 0.0
        if self.log_every and len(self._records) % self.log_every == 0:
            window = summarise_records(self._records[-self.log_every :])
            self._log(f"step {len(self._records)}: {window.format(self.unit)}")
        return rec

    def summary(self, skip_first: int = 0) -> StepSummary:
        """Aggregate of all steps but the first ``skip_first`` (warm-up steps are often slower)."""
        return summarise_records(self._records[skip_first:])
