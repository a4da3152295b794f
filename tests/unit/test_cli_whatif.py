"""``stepscope whatif``: the JSON is the simulation's numbers; bad changes are one-line usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepscope import load
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.optimizer import FusedOptimizer
from stepscope.analysis.whatif.simulate import simulate
from stepscope.cli import main

BASE = Path(__file__).resolve().parents[1] / "data" / "h100_cuda_train" / "base"
UNPROFILED_RANGE = "--unprofiled takes a cost per recorded op from 0 to 1000 µs"


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_json_is_the_simulation(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _main(["whatif", str(BASE), "--workers", "8", "--drop-syncs", "_local_scalar_dense",
                        "--json", "--no-cache"], capsys)
    assert rc == 0
    doc = json.loads(out)
    w = simulate(load(BASE), [tf.LoaderWorkers(8), tf.DropSyncs(tf.Select("_local_scalar_dense"))])
    job = doc["job"]
    assert job["predicted_mean_ms"] == pytest.approx(w.mean_ns(True) / 1e6, abs=1e-3)
    assert job["measured_median_ms"] == pytest.approx(w.median_ns(False) / 1e6, abs=1e-3)
    assert [s["step"] for s in job["steps"]] == w.ranks[0].step.tolist()
    assert job["bound_before"] == "input" and job["bound_after"] == "host"
    assert len(doc["changes"]) == 2 and "8 DataLoader workers" in doc["changes"][0]


def test_fused_optimizer_is_the_transform(capsys: pytest.CaptureFixture[str]) -> None:
    """``--fused-optimizer`` replays :class:`FusedOptimizer` (the base's per-tensor SGD) and says its basis."""
    rc, out, _ = _main(["whatif", str(BASE), "--fused-optimizer", "--json", "--no-cache"], capsys)
    assert rc == 0
    doc = json.loads(out)
    w = simulate(load(BASE), [FusedOptimizer()])
    assert doc["job"]["predicted_mean_ms"] == pytest.approx(w.mean_ns(True) / 1e6, abs=1e-3)
    assert w.mean_ns(True) < w.mean_ns(False)
    assert doc["changes"] == [FusedOptimizer().basis()]


@pytest.mark.parametrize("argv, message", [
    (["whatif", str(BASE)], "name at least one change"),
    (["whatif", str(BASE), "--scale", "gemm"], "--scale takes REGEX=FACTOR"),
    (["whatif", str(BASE), "--host-in", "Optimizer=-1"], "--host-in takes REGEX=FACTOR"),
    (["whatif", str(BASE), "--scale", "gemm=nan"], "--scale takes REGEX=FACTOR with a factor from 0 to 1000"),
    (["whatif", str(BASE), "--host-in", "Optimizer=inf"], "--host-in takes REGEX=FACTOR with a factor from 0 to 1000"),
    (["whatif", str(BASE), "--host-overhead", "nan"], "--host-overhead takes a factor from 0 to 1000"),
    (["whatif", str(BASE), "--scale", "gemm=1e300"], "--scale takes REGEX=FACTOR with a factor from 0 to 1000"),
    (["whatif", str(BASE), "--drop-syncs", "("], "--drop-syncs: not a regular expression"),
    (["whatif", str(BASE), "--scale", "a[=0.5"], "--scale: not a regular expression"),
    # an optional value click would read as an unknown option "-1" ("No such option")
    (["whatif", str(BASE), "--unprofiled", "-1"], f"{UNPROFILED_RANGE} (got -1)"),
    (["whatif", str(BASE), "--unprofiled=-0.5"], f"{UNPROFILED_RANGE} (got -0.5)"),
    (["whatif", str(BASE), "--unprofiled", "2000"], UNPROFILED_RANGE),
    # both would apply, one after the other: 2 workers, then 4
    (["whatif", str(BASE), "--workers", "2", "--remedy", "loader-workers"], "two changes set the same thing"),
    (["whatif", str(BASE), "--host-overhead", "0.5", "--remedy", "graph-capture"], "two changes set the same thing"),
    (["whatif", str(BASE), "--remedy", "no-such"], "no such remedy 'no-such' (the standard remedies: loader-workers,"),
])
def test_bad_changes_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    rc, out, err = _main(argv, capsys)
    assert rc == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_the_calibrated_cost_is_refused_on_a_cpu_only_run(capsys: pytest.CaptureFixture[str]) -> None:
    """--unprofiled without a value on a CPU-only run that measured no cost: the 8 µs calibrated on CUDA hosts
    exceeds most CPU ops' own time (small CPU steps replayed to 0.00 ms; the embedded sample's 82.45 ms step lost
    8.00 ms to it): one line, naming --step-ms."""
    rc, out, err = _main(["whatif", "--unprofiled", "--no-cache"], capsys)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "this CPU-only run measured none" in err and "--step-ms MS" in err
    rc, out, _ = _main(["whatif", "--unprofiled", "0.5", "--json", "--no-cache"], capsys)  # a cost given: replayed
    assert rc == 0 and json.loads(out)["job"]["predicted_mean_ms"] > 0


def test_workers_on_a_cpu_only_run_carry_the_cores_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    """A CPU-only trace (the embedded sample): the workers would take the training's own cores."""
    rc, out, _ = _main(["whatif", "--workers", "2", "--json", "--no-cache"], capsys)
    assert rc == 0 and any("CPU-only run" in c for c in json.loads(out)["caveats"])
    rc, out, _ = _main(["whatif", str(BASE), "--workers", "2", "--json", "--no-cache"], capsys)
    assert rc == 0 and json.loads(out)["caveats"] == []  # a GPU run: the workers take idle host cores


def test_a_larger_batch_in_the_terminal_adds_time_and_says_the_samples_per_second(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--batch 64:128`` on the H100 base run (shapes recorded, batch 64): the step grows, said as
    "adds", with the samples/s change of the JSON's ``throughput_change_pct``; ``--batch`` alone
    without shapes, or a bad value, is one line (exit 2)."""
    rc, out, _ = _main(["whatif", str(BASE), "--batch", "64:128", "--json", "--no-cache"], capsys)
    job = json.loads(out)["job"]
    assert rc == 0 and job["saved_mean_ms"] < 0 and job["samples_per_step_factor"] == 2
    rc, out, _ = _main(["whatif", str(BASE), "--batch", "64:128", "--no-cache"], capsys)
    text = " ".join(out.split())  # the console wraps at its width
    assert rc == 0 and f"(adds {-job['saved_mean_ms']:,.2f} ms)" in text
    assert f"samples/s {job['throughput_change_pct']:+,.1f} %" in text
    rc, out, err = _main(["whatif", str(BASE), "--batch", "64", "--no-cache"], capsys)
    assert rc == 2 and "--batch takes FROM:TO" in err and len(err.strip().splitlines()) == 1
