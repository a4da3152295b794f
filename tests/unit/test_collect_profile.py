"""profile() on a tiny real loop, and the pieces of ``stepscope run`` (needs torch)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepscope.collect.runner import parse_command
from stepscope.errors import UsageError

SCRIPT = Path(__file__).resolve().parents[1] / "data" / "train_script.py"


def test_importing_collect_does_not_import_torch() -> None:
    code = "import sys, stepscope.collect, stepscope.cli.run_cmd; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("argv", "kind", "name", "args"), [
    (["python", str(SCRIPT), "--steps", "3"], "path", str(SCRIPT), ("--steps", "3")),
    (["python3.11", "-u", str(SCRIPT)], "path", str(SCRIPT), ()),
    ([str(SCRIPT), "x"], "path", str(SCRIPT), ("x",)),
    (["python", "-m", "pkg.train", "--lr", "1"], "module", "pkg.train", ("--lr", "1")),
])
def test_parse_command(argv: list[str], kind: str, name: str, args: tuple[str, ...]) -> None:
    target = parse_command(argv)
    assert (target.kind, target.name, target.args) == (kind, name, args)


@pytest.mark.parametrize("argv", [[], ["python"], ["python", "-m"], ["python", "-c", "1"],
                                  ["python", "no_such_script.py"]])
def test_parse_command_rejects(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_command(argv)


def _read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return doc


def test_profile_writes_steps_and_counters(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from stepscope.collect import StepTimer, profile

    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    timer = StepTimer(log_every=0, batch_size=4)
    with profile(tmp_path, wait=1, warmup=1, active=2, worker_name="w0", sample_interval_s=0.01) as prof:
        for x in timer.wrap([torch.randn(4, 8) for _ in range(5)]):
            model(x).sum().backward()
            opt.step()
            prof.step()
            timer.step()
    (path,) = prof.trace_files
    assert path.parent == tmp_path and path.name.startswith("w0.")
    events = _read(path)["traceEvents"]
    steps = sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"]
    counters = {e["name"] for e in events if e.get("ph") == "C"}
    assert {"stepscope.cpu_pct", "stepscope.proc_cpu_pct", "stepscope.rss_bytes"} <= counters
    assert len(timer.records) == 5


def test_profile_rejects_bad_schedule(tmp_path: Path) -> None:
    from stepscope.collect import profile

    with pytest.raises(UsageError), profile(tmp_path, active=0):
        pass


def test_run_script_steps_at_optimizer_steps(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from stepscope.collect.profiler import ProfileOptions
    from stepscope.collect.runner import run_script

    argv_before = sys.argv[:]
    result = run_script(["python", str(SCRIPT), "--steps", "6"], tmp_path / "out",
                        ProfileOptions(wait=1, warmup=1, active=2), log_every=0)
    assert sys.argv == argv_before  # restored
    assert result.exit_code == 0
    assert len(result.records) == 6  # one record per optimizer step
    # the profiler's action during each step: wait 1, warmup 1, active 2 (the last saves), then off
    assert result.phases == ("NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE", "NONE")
    assert sum(r.reader_cost_s for r in result.records) > 0  # DataLoader __next__ was timed
    (path,) = result.trace_files
    names = {e.get("name", "") for e in _read(path)["traceEvents"]}
    assert {"ProfilerStep#2", "ProfilerStep#3"} <= names


def test_run_script_reports_script_failure(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from stepscope.collect.runner import run_script

    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nsys.exit(3)\n")
    assert run_script([str(bad)], tmp_path / "out", log_every=0).exit_code == 3
    boom = tmp_path / "boom.py"
    boom.write_text("raise RuntimeError('boom')\n")
    result = run_script([str(boom)], tmp_path / "out2", log_every=0)
    assert result.exit_code == 1 and result.trace_files == ()


def test_a_short_run_says_its_capture_is_partial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``run -- python train_script.py --steps 2`` on the default schedule (wait 1, warmup 1, active 3)
    reported "1 profiled steps ... mean step 3.76 ms" of a step cut at the script's end, silently."""
    pytest.importorskip("torch")
    from stepscope.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "--log-every", "0", "--out", str(tmp_path / "out"), "--", "python", str(SCRIPT), "--steps", "2"])
    err = capsys.readouterr().err
    assert exc.value.code == 0, err
    warning = err[err.index("[stepscope] warning:"):]
    assert "asked for 3 recorded steps" in warning and "5 optimizer steps" in warning
    assert "made 2 optimizer steps: 0 recorded in full" in warning
    assert "partial" in warning and "not representative" in warning


def test_run_script_counts_the_steps_recorded_in_full(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from stepscope.collect.profiler import ProfileOptions
    from stepscope.collect.runner import capture_shortfall, run_script

    opts = ProfileOptions(wait=1, warmup=1, active=3)
    short = run_script(["python", str(SCRIPT), "--steps", "4"], tmp_path / "short", opts, log_every=0)
    assert (short.recorded_steps, short.cut_short) == (2, True)
    lines = capture_shortfall(short, opts)
    assert "made 4 optimizer steps: 2 recorded in full" in lines[0] and "partial" in lines[1]
    whole = run_script(["python", str(SCRIPT), "--steps", "5"], tmp_path / "whole", opts, log_every=0)
    assert (whole.recorded_steps, whole.cut_short) == (3, False)
    assert capture_shortfall(whole, opts) == []
