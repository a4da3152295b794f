"""End to end: ``stepscope run`` on an unmodified script, ``stepscope demo``, the fixtures load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="capture needs torch: pip install 'stepscope[torch]'")

import stepscope  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "data" / "train_script.py"
COUNTERS = {"stepscope.cpu_pct", "stepscope.proc_cpu_pct", "stepscope.rss_bytes"}


def _stepscope(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "stepscope", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def _counter_names(trace: stepscope.Trace) -> set[str]:
    return set(trace.names(trace.counters["name"]))


def test_run_profiles_unmodified_script(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    proc = _stepscope("run", "--out", str(out), "--wait", "1", "--warmup", "1", "--active", "3",
                      "--", "python", str(SCRIPT), "--steps", "8")
    assert proc.returncode == 0, proc.stderr
    assert "done: final loss" in proc.stdout  # the script ran, as __main__, with its own argv
    assert "trace file(s) in" in proc.stderr and "profiled steps" in proc.stderr
    files = list(out.glob("*.pt.trace.json.gz"))
    assert len(files) == 1
    trace = stepscope.load(out)
    assert len(trace.steps) == 3
    assert sorted(trace.steps["step"].tolist()) == [2, 3, 4]
    assert _counter_names(trace) >= COUNTERS
    assert not list(Path.cwd().glob("*.pt.trace.json*"))  # nothing written into the CWD


def test_run_passes_script_exit_code(tmp_path: Path) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import sys\nsys.exit(4)\n")
    proc = _stepscope("run", "--out", str(tmp_path / "o"), "--", "python", str(script))
    assert proc.returncode == 4
    assert "no trace written" in proc.stderr


def test_default_trace_fixture_is_real_and_input_bound() -> None:
    path = ROOT / "stepscope" / "data" / "default_trace.pt.trace.json.gz"
    assert path.stat().st_size < 400 * 1024
    trace = stepscope.load(path)
    assert len(trace.steps) == 4
    assert _counter_names(trace) >= COUNTERS
    from stepscope.cli.demo_run import trace_stats

    assert trace_stats(path).dataloader_share > 0.5


def test_ddp_fixture_has_two_ranks() -> None:
    run_dir = ROOT / "tests" / "data" / "cpu_ddp_2rank"
    files = sorted(p.name.split(".")[0] for p in run_dir.glob("*.pt.trace.json.gz"))
    assert files == ["worker0", "worker1"]
    assert all(p.stat().st_size < 300 * 1024 for p in run_dir.iterdir())
    trace = stepscope.load(run_dir)
    assert trace.rank_ids == [0, 1]
    assert len(trace.steps) == 6


@pytest.mark.slow
def test_demo_shows_input_bound_then_faster(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    proc = _stepscope("demo", "--out", str(tmp_path / "demo"), "--json", timeout=180)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert "bound by the input pipeline" in proc.stderr  # the advisor's verdict on the first run
    assert "dataloader-bound" in proc.stderr or "Input pipeline stalls the step" in proc.stderr
    assert result["after"]["ips"] > result["before"]["ips"] * 1.15
    assert result["after"]["reader_cost_s"] < result["before"]["reader_cost_s"]
    assert "dataloader per step" in proc.stderr  # the diff engine's comparison of the two traces
    # its mean step is said once (the narrative's "Average step 110.0 → 64.0 ms" repeated it, rounded otherwise)
    assert "mean step" in proc.stderr and "Average step" not in proc.stderr and "Biggest changes" in proc.stderr
    assert wall < 120
