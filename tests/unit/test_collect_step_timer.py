"""StepTimer arithmetic on a fake clock: every number here can be checked by hand."""

from __future__ import annotations

import pytest

from stepscope.collect.step_timer import StepRecord, StepTimer, summarise_records


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SlowLoader:
    """An iterable whose every batch takes ``wait_s`` on the fake clock."""

    def __init__(self, clock: FakeClock, batches: int, wait_s: float) -> None:
        self.clock, self.batches, self.wait_s = clock, batches, wait_s

    def __iter__(self):  # type: ignore[no-untyped-def]
        for i in range(self.batches):
            self.clock.advance(self.wait_s)
            yield i


def test_wrap_splits_reader_and_batch_cost() -> None:
    clock = FakeClock()
    lines: list[str] = []
    timer = StepTimer(log_every=2, batch_size=8, clock=clock, log=lines.append)
    for _ in timer.wrap(SlowLoader(clock, batches=4, wait_s=0.030)):
        clock.advance(0.010)  # the model's work
        timer.step()
    recs = timer.records
    assert [r.step for r in recs] == [0, 1, 2, 3]
    for r in recs:
        assert r.batch_cost_s == pytest.approx(0.040)
        assert r.reader_cost_s == pytest.approx(0.030)
        assert r.samples == 8
        assert r.ips == pytest.approx(200.0)  # 8 samples / 0.040 s
    assert len(lines) == 2
    assert lines[0] == "step 2: ips 200.0 samples/s | batch_cost 40.00 ms | reader_cost 30.00 ms (75%)"


def test_step_without_start_has_zero_cost_and_explicit_samples() -> None:
    clock = FakeClock()
    timer = StepTimer(log_every=0, clock=clock)
    first = timer.step(samples=4)
    assert first.batch_cost_s == 0.0 and first.ips == 0.0
    clock.advance(0.5)
    second = timer.step()
    assert second.batch_cost_s == pytest.approx(0.5)
    assert second.samples == 1  # no batch size known: one instance per step
    assert second.ips == pytest.approx(2.0)


def test_start_then_reading_block() -> None:
    clock = FakeClock()
    timer = StepTimer(log_every=0, clock=clock)
    timer.start()
    clock.advance(0.1)
    with timer.reading():
        clock.advance(0.2)
    clock.advance(0.1)
    rec = timer.step(samples=10)
    assert rec.batch_cost_s == pytest.approx(0.4)
    assert rec.reader_cost_s == pytest.approx(0.2)


def test_summary_weights_by_total_time_and_skips_warmup() -> None:
    recs = [StepRecord(0, 1.0, 1.0, 0.5, 10), StepRecord(1, 1.1, 0.1, 0.0, 10),
            StepRecord(2, 1.4, 0.3, 0.1, 10)]
    s = summarise_records(recs)
    assert s.steps == 3 and s.samples == 30
    assert s.ips == pytest.approx(30 / 1.4)  # total samples / total time, not mean of ips
    assert s.mean_batch_cost_s == pytest.approx(1.4 / 3)
    assert s.mean_reader_cost_s == pytest.approx(0.2)
    timer = StepTimer(log_every=0)
    assert timer.summary().steps == 0
    assert summarise_records(recs[1:]).ips == pytest.approx(50.0)  # 20 / 0.4


def test_empty_summary_and_bad_args() -> None:
    s = summarise_records([])
    assert (s.steps, s.ips, s.reader_pct) == (0, 0.0, 0.0)
    with pytest.raises(ValueError):
        StepTimer(log_every=-1)


def test_record_to_dict() -> None:
    d = StepRecord(3, 2.0, 0.25, 0.05, 5).to_dict()
    assert d == {"step": 3, "end_s": 2.0, "batch_cost_s": 0.25, "reader_cost_s": 0.05,
                 "samples": 5, "ips": 20.0}


def test_rate_is_steps_per_second_without_a_batch_size() -> None:
    """`stepscope run` printed "ips 25.4 samples/s" counting each step as one sample: without a batch
    size the rate is steps/s; samples/s only when the batch size (or each step's samples) is known."""
    clock = FakeClock()
    lines: list[str] = []
    timer = StepTimer(log_every=2, clock=clock, log=lines.append)
    for _ in timer.wrap(SlowLoader(clock, batches=2, wait_s=0.030)):
        clock.advance(0.010)
        timer.step()
    assert timer.unit == "steps"
    assert lines == ["step 2: 25.00 steps/s | batch_cost 40.00 ms | reader_cost 30.00 ms (75%)"]
    assert "samples" not in summarise_records(timer.records).format(timer.unit)
    known = StepTimer(log_every=0, batch_size=8)
    assert known.unit == "samples"
    counted = StepTimer(log_every=0, clock=clock)
    counted.step(samples=4)
    assert counted.unit == "samples"


def test_run_command_reports_samples_only_with_batch_size(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from stepscope.cli.run_cmd import _report

    recs = (StepRecord(0, 1.0, 0.04, 0.03, 1), StepRecord(1, 1.04, 0.04, 0.03, 1))
    _report((Path("t.json"),), recs, Path("."), 3)
    assert "25.00 steps/s" in capsys.readouterr().err
    recs8 = tuple(StepRecord(r.step, r.end_s, r.batch_cost_s, r.reader_cost_s, 8) for r in recs)
    _report((Path("t.json"),), recs8, Path("."), 3, batch_size=8)
    assert "ips 200.0 samples/s" in capsys.readouterr().err
