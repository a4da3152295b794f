"""DataLoader workers replayed (``stepscope.analysis.whatif.loader``) on CPU-only micro traces, every
prediction computed by hand (µs).

``loader_trace(waits, rests)``: one step per pair, back to back from 0; each step a
``__next__`` call of ``wait`` then an op ``compute`` of ``rest`` — the multi-process iterator's name
unless ``single``; times in ``unit`` µs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stepscope.advisor.engine import run_advisor
from stepscope.analysis.bundle import analyze
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.loader import loader_period_ns
from stepscope.analysis.whatif.remedies import REMEDIES, compute_remedies
from stepscope.analysis.whatif.simulate import simulate
from stepscope.cli import main
from stepscope.model.trace import Trace
from stepscope.report import texts
from tests.builders import TraceBuilder

MULTI = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
SINGLE = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def loader_trace(tmp_path: Path, waits: list[int], rests: list[int], single: bool = False, unit: int = 1) -> Path:
    b = TraceBuilder()
    t = 0
    for n, (w, r) in enumerate(zip([w * unit for w in waits], [r * unit for r in rests])):
        b.step(n + 1, ts=t, dur=w + r)
        b.op(SINGLE if single else MULTI, ts=t, dur=w, cat="user_annotation")
        b.op("compute", ts=t + w, dur=r)
        t += w + r
    return b.write(tmp_path / "trace.json")


def _load(path: Path) -> Trace:
    import stepscope

    return stepscope.load(path, use_cache=False)


def _steps_us(trace: Trace, *changes: tf.Transform) -> list[float]:
    return (simulate(trace, changes).ranks[0].predicted_ns / 1000).tolist()


#: waits 10, 30, 5, 30 and rests 20, 20, 35, 20: steps 30, 50, 40, 50, mean 42.5 > every rest, so every
#: step waits for the workers and the loader's period P is the mean step, 42.5
WAITS, RESTS = [10, 30, 5, 30], [20, 20, 35, 20]


@pytest.fixture
def alternating(tmp_path: Path) -> Trace:
    return _load(loader_trace(tmp_path, WAITS, RESTS))


def test_the_period_is_the_one_that_gives_the_measured_mean_step() -> None:
    """mean(max(rest, P)) = mean(rest + wait): P = 42.5 above every rest; with waits of 1 and rests
    20, 40 (the workers keep ahead): (P + 40) / 2 = 31, P = 22; with no wait at all, the smallest rest."""
    assert loader_period_ns(np.array(RESTS, float), np.array(WAITS, float)) == pytest.approx(42.5)
    assert loader_period_ns(np.array([20.0, 40.0]), np.array([1.0, 1.0])) == pytest.approx(22.0)
    assert loader_period_ns(np.array([20.0, 40.0]), np.zeros(2)) == pytest.approx(20.0)


def test_as_many_workers_as_the_trace_ran_with_change_nothing(alternating: Trace) -> None:
    assert _steps_us(alternating, tf.LoaderWorkers(2, 2)) == [30, 50, 40, 50]


def test_twice_the_workers_halve_the_period(alternating: Trace) -> None:
    """2 → 4: batches every 42.5 / 2 = 21.25; each step waits max(0, 21.25 − rest): 1.25, 1.25, 0, 1.25 —
    steps 21.25, 21.25, 35, 21.25 (mean 24.6875, not the 20-35 rests alone: the workers still bound
    three steps). 1 → 2 is the same ratio, the same replay."""
    assert _steps_us(alternating, tf.LoaderWorkers(4, 2)) == pytest.approx([21.25, 21.25, 35, 21.25], abs=0.002)
    assert _steps_us(alternating, tf.LoaderWorkers(2, 1)) == _steps_us(alternating, tf.LoaderWorkers(4, 2))


def test_fewer_workers_lengthen_every_step_to_the_longer_period(alternating: Trace) -> None:
    """2 → 1: a batch every 85; each step waits 85 − its rest: every step 85 (a batch costs a worker 85)."""
    assert _steps_us(alternating, tf.LoaderWorkers(1, 2)) == pytest.approx([85, 85, 85, 85], abs=0.002)


def test_workers_that_keep_ahead_bound_the_period_only(tmp_path: Path) -> None:
    """Waits of 1 (taking a ready batch) and rests 20, 40: P = 22 (at most); 2 → 4 waits max(0, 11 − rest)
    = 0: steps 20, 40 (the receive time saved); 2 → 1: 44 − rest = 24, 4: steps 44, 44 — an upper bound."""
    trace = _load(loader_trace(tmp_path, [1, 1], [20, 40]))
    assert _steps_us(trace, tf.LoaderWorkers(4, 2)) == pytest.approx([20, 40], abs=0.002)
    assert _steps_us(trace, tf.LoaderWorkers(1, 2)) == pytest.approx([44, 44], abs=0.002)


def test_the_rest_is_what_the_changes_before_left(alternating: Trace) -> None:
    """The compute halved first (rests 10, 10, 17.5, 10), then 2 → 4 workers: the loader's period is still
    the measured 42.5 (halved 21.25), so each step waits 21.25 − its new rest: 11.25, 11.25, 3.75, 11.25 —
    every step 21.25. Without the correction the replay would keep the old rests' waits (1.25 …): 11.25."""
    half = tf.HostOverhead(0.5, tf.Select("^compute$"))
    assert _steps_us(alternating, half, tf.LoaderWorkers(4, 2)) == pytest.approx([21.25] * 4, abs=0.002)


def test_a_single_process_loader_divides_its_fetch(tmp_path: Path) -> None:
    """num_workers=0: fetches 10, 30, 5, 30 (the whole batch), rests 20, 20, 35, 20; 2 workers: max(0,
    fetch / 2 − rest) = 0 everywhere (15 < 20): the rests alone; 1 worker: 30 − 20 = 10 in steps 2 and 4.
    ``--workers 0:2`` is ``--workers 2``."""
    trace = _load(loader_trace(tmp_path, WAITS, RESTS, single=True))
    assert _steps_us(trace, tf.LoaderWorkers(2)) == pytest.approx([20, 20, 35, 20], abs=0.002)
    assert _steps_us(trace, tf.LoaderWorkers(2, 0)) == _steps_us(trace, tf.LoaderWorkers(2))
    assert _steps_us(trace, tf.LoaderWorkers(1)) == pytest.approx([20, 30, 35, 30], abs=0.002)


def test_the_remedy_halves_a_running_loaders_period_and_gives_a_free_one_4_workers(tmp_path: Path,
                                                                                   alternating: Trace) -> None:
    """The remedy on the multi-process trace is ``--workers 1:2`` (mean 24.6875 µs: 17.8125 saved); on the
    single-process one ``--workers 4``; its basis says which, and on a CPU-only rank the cores caveat."""
    remedy = REMEDIES["loader-workers"]
    assert _steps_us(alternating, remedy) == _steps_us(alternating, tf.LoaderWorkers(2, 1))
    r = compute_remedies(alternating, 0)
    assert r.saved_ns("loader-workers") == pytest.approx(17_812.5, abs=3)
    assert "time per batch × 0.5" in r.basis_of("loader-workers") and "CPU-only" in r.basis_of("loader-workers")
    (tmp_path / "single").mkdir()
    single = _load(loader_trace(tmp_path / "single", WAITS, RESTS, single=True))
    assert _steps_us(single, remedy) == _steps_us(single, tf.LoaderWorkers(4))
    assert compute_remedies(single, 0).basis_of("loader-workers").startswith("4 DataLoader workers: each call")


def test_the_finding_on_a_running_loader_claims_the_halved_period_and_says_what_to_do(alternating: Trace) -> None:
    """dataloader-bound on the multi-process CPU trace: gain 17.8125 µs (the remedy above), the change
    names the workers it already has and cheaper samples first (a CPU-only job), the basis the caveat."""
    (f,) = [f for f in run_advisor(analyze(alternating)).findings if f.rule == "dataloader-bound"]
    assert f.basis == "replayed" and f.est_gain_ns == pytest.approx(17_812.5, abs=3)
    assert "CPU-only: workers take the cores" in str(f.evidence["whatif_basis"])
    change = texts.change_text(f)
    assert "already has workers" in change and "cache the decoded samples" in change


def _cli(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(["whatif", str(path), *args, "--json", "--no-cache"])
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.mark.parametrize(("single", "workers", "words"), [
    (False, "4", "give --workers FROM:TO, FROM the num_workers it ran with (e.g. --workers 2:4)"),
    (False, "0:4", "FROM is the num_workers it ran with, at least 1"),
    (True, "2:4", "loads in the main process (num_workers=0): give --workers N"),
    (True, "4:x", "--workers takes N or FROM:TO"),
])
def test_a_count_that_contradicts_the_trace_is_a_one_line_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], single: bool, workers: str, words: str) -> None:
    code, out, err = _cli(capsys, loader_trace(tmp_path, WAITS, RESTS, single), "--workers", workers)
    assert code == 2 and not out and words in err and len(err.strip().splitlines()) == 1


def test_the_command_line_replays_from_to(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The alternating trace in ms: 2 → 4 workers, the mean step 42.5 → 24.6875 ms."""
    code, out, _ = _cli(capsys, loader_trace(tmp_path, WAITS, RESTS, unit=1000), "--workers", "2:4")
    job = json.loads(out)["job"]
    assert code == 0 and job["predicted_mean_ms"] == pytest.approx(24.6875, abs=0.001)
    assert "2 → 4 DataLoader workers (the loader already has workers)" in json.loads(out)["changes"][0]
