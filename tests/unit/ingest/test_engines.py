"""The ``ray`` engine (a Ray task per rank file) gives exactly the Trace of the ``local`` engine:
every table, the string pool (so every decoded string), the ranks and the diagnostics.

The Ray tests share one local Ray (2 CPUs, no dashboard) started once for the module; they skip
when Ray is not installed (``pip install -e '.[ray]'``). The engine's own logic (per-task string
pools remapped into the trace's pool, diagnostics merged in order) is also checked without Ray,
through an in-process stand-in for the two Ray calls the engine makes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import stepscope
from stepscope.cli import cli
from stepscope.errors import TraceFormatError, UsageError
from stepscope.ingest import engines
from stepscope.model.schema import TABLE_SCHEMAS
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder

CPU_DDP = Path(__file__).resolve().parents[2] / "data" / "cpu_ddp_2rank"
DLRM = "param_dlrm/dlrm_8rank_v100"


def assert_same(a: Trace, b: Trace) -> None:
    for name in TABLE_SCHEMAS:
        ta, tb = getattr(a, name), getattr(b, name)
        assert len(ta) == len(tb), name
        for c in ta:
            assert ta[c].dtype == tb[c].dtype, f"{name}.{c}"
            assert np.array_equal(ta[c], tb[c], equal_nan=ta[c].dtype.kind == "f"), f"{name}.{c}"
    assert a.strings.strings == b.strings.strings
    assert list(a.strings.decode(a.events["name"])) == list(b.strings.decode(b.events["name"]))
    assert a.ranks == b.ranks
    assert a.diagnostics == b.diagnostics
    assert a.source == b.source


def _both(path: Path) -> tuple[Trace, Trace]:
    return (stepscope.load(path, use_cache=False),
            stepscope.load(path, use_cache=False, engine="ray"))


def _diagnosed_run(tmp_path: Path) -> Path:
    """Three rank files whose diagnostics overlap (B/E events, events without ts) and one truncated."""
    run = tmp_path / "run"
    run.mkdir()
    for rank in range(3):
        b = TraceBuilder()
        b.meta["distributedInfo"] = {"rank": rank, "world_size": 4, "backend": "nccl"}
        b.step(1, 0, 100)
        b.op(f"aten::op_{rank}", 5, 10)
        b.launch_kernel(f"kernel_{rank % 2}", launch_ts=6, launch_dur=2, ts=20, dur=30)
        b.thread_name(f"thread {rank}")
        b.add(ph="B", name="begin", pid=b.pid, tid=b.tid, ts=1)
        b.add(ph="X", name="no ts", pid=b.pid, tid=b.tid, dur=1, cat="cpu_op")
        path = b.write(run / f"worker{rank}.1.pt.trace.json")
        if rank == 2:
            path.write_bytes(path.read_bytes()[:-40])
    return run


# ---- without Ray: the driver's logic through an in-process stand-in for ray.remote / ray.get ----

@pytest.fixture
def inline_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    def remote(**_options: Any) -> Callable[[Callable[..., Any]], Any]:
        return lambda fn: SimpleNamespace(remote=lambda *args: fn(*args))

    fake = SimpleNamespace(is_initialized=lambda: True, remote=remote, get=lambda ref: ref,
                           exceptions=SimpleNamespace(RayTaskError=type("RayTaskError", (Exception,), {})))
    monkeypatch.setattr(engines, "import_ray", lambda: fake)


@pytest.mark.usefixtures("inline_ray")
def test_remapped_per_file_pools_equal_local(tmp_path: Path) -> None:
    assert_same(*_both(CPU_DDP))
    a, b = _both(_diagnosed_run(tmp_path))
    assert_same(a, b)
    assert {"phase-b-e-unsupported", "event-missing-ts", "truncated-file"} <= {d.name for d in a.diagnostics}


def test_engine_choice_is_checked() -> None:
    with pytest.raises(UsageError, match="unknown engine"):
        stepscope.load(CPU_DDP, engine="spark")
    with pytest.raises(UsageError, match="needs the ray engine"):
        stepscope.load(CPU_DDP, ray_address="auto")
    res = CliRunner().invoke(cli, ["analyze", "--json", str(CPU_DDP), "--ray-address", "auto"])
    assert isinstance(res.exception, UsageError) and "needs the ray engine" in str(res.exception)


# ---- with a real (local) Ray ----

@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_equals_local_on_real_8_ranks(ray_cluster: Any, shared_traces: Path) -> None:
    if not (shared_traces / DLRM).is_dir():
        pytest.skip(f"{DLRM} not found under {shared_traces}")
    local, remote = _both(shared_traces / DLRM)
    assert len(remote.ranks) == 8 and len(remote.events) > 10_000
    assert_same(local, remote)


def test_ray_equals_local_on_cpu_ddp_and_damaged_files(ray_cluster: Any, tmp_path: Path) -> None:
    assert_same(*_both(CPU_DDP))
    assert_same(*_both(_diagnosed_run(tmp_path)))


def test_ray_raises_the_readers_error(ray_cluster: Any, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for f in CPU_DDP.iterdir():
        (run / f.name).write_bytes(f.read_bytes())
    (run / "worker9.1.pt.trace.json").write_text('{"traceEvents": 12}')
    with pytest.raises(TraceFormatError) as local:
        stepscope.load(run, use_cache=False)
    with pytest.raises(TraceFormatError) as remote:
        stepscope.load(run, use_cache=False, engine="ray")
    assert str(remote.value) == str(local.value)


def test_cli_engine_ray_gives_the_same_report(ray_cluster: Any) -> None:
    runner = CliRunner()
    local = runner.invoke(cli, ["analyze", "--json", "--no-cache", str(CPU_DDP)])
    remote = runner.invoke(cli, ["analyze", "--json", "--no-cache", "--engine", "ray", str(CPU_DDP)])
    assert local.exit_code == remote.exit_code == 0, remote.output
    assert remote.output == local.output
