"""Capture the CPU cases of ``tests/data/cpu_cases``: one deliberate bottleneck each (README there).

``python tests/data/cpu_cases/capture.py --case NAME --out DIR`` (torch, CPU build; one thread). Each
case profiles 5 steps (``schedule(wait=1, warmup=1, active=3)``, ``record_shapes=True``) after
timing some steps without the profiler, and times the named parts of every step with
``time.perf_counter``: the evidence of what bounds it, independent of stepscope, written to
``DIR/NAME/timing.json``. ``ddp_gloo`` spawns two gloo ranks and also times the step without its
all-reduce (``DistributedDataParallel.no_sync``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

Step = Callable[[], None]
PIECES: dict[str, list[float]] = {}


class piece:
    """Time a named part of the step (seconds, appended to :data:`PIECES`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.t = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        PIECES.setdefault(self.name, []).append(time.perf_counter() - self.t)


def run(step: Step, out: Path, unprofiled_steps: int = 3, profile_memory: bool = False,
        worker_name: str | None = None) -> dict[str, object]:
    """Time ``step`` without the profiler, then profile 5 steps into ``out``; the timings."""
    out.mkdir(parents=True, exist_ok=True)
    unprofiled = []
    for _ in range(unprofiled_steps):
        t = time.perf_counter()
        step()
        unprofiled.append(time.perf_counter() - t)
    PIECES.clear()
    times = []
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=tensorboard_trace_handler(str(out), worker_name=worker_name),
                 record_shapes=True, profile_memory=profile_memory) as prof:
        for _ in range(5):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
            prof.step()
    active = times[2:5]  # the recorded steps
    return {"unprofiled_step_ms": [round(x * 1e3, 2) for x in unprofiled],
            "step_ms_all": [round(x * 1e3, 2) for x in times],
            "active_step_ms_mean": round(sum(active) / 3 * 1e3, 2),
            "pieces_ms_mean_active": {k: round(sum(v[2:5]) / 3 * 1e3, 2) for k, v in PIECES.items() if len(v) >= 5}}


def sgd_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor | None) -> None:
    loss = nn.functional.cross_entropy(model(x), y) if y is not None else model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def gc_pause() -> tuple[Step, dict[str, object]]:
    """``gc.collect()`` every step over 300 k live pairs of cyclic dicts (a metadata cache)."""
    cache = []
    for i in range(300_000):
        a: dict[str, object] = {"id": i, "tags": [i, str(i)]}
        a["peer"] = {"peer": a}
        cache.append(a)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def step() -> None:
        with piece("train"):
            sgd_step(model, opt, x, y)
        with piece("gc"):
            gc.collect()
    return step, {"cache": len(cache)}


def ckpt_every_step() -> tuple[Step, dict[str, object]]:
    """``torch.save`` of the model and Adam's state (~100 MB) every step, then an fsync."""
    model = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(8)])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(8, 1024)
    path = os.path.join(tempfile.gettempdir(), "cpu_cases_ckpt.pt")

    def step() -> None:
        with piece("train"):
            sgd_step(model, opt, x, None)
        with piece("save"):
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
    return step, {}


def alloc_churn() -> tuple[Step, dict[str, object]]:
    """Big temporaries every step (a 64 MB zeroed buffer, a 128 MB torch.cat, a 128 MB clone), freed at
    its end; ``profile_memory=True``."""
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    feat = torch.randn(4096, 4096)

    def step() -> None:
        with piece("churn"):
            padded = torch.cat([feat, torch.zeros(4096, 4096)], dim=0)
            s = padded.clone()[:64, :256].contiguous()
        with piece("train"):
            sgd_step(model, opt, x + s * 0, y)
    return step, {"profile_memory": True}


def tiny_ops() -> tuple[Step, dict[str, object]]:
    """~2,000 recorded ops a step on 4-element tensors: 50 parameters, a Python loop over them."""
    params = [torch.randn(4, requires_grad=True) for _ in range(50)]
    opt = torch.optim.SGD(params, lr=1e-3)
    x = torch.randn(4)

    def step() -> None:
        with piece("forward"):
            h, loss = x, torch.zeros(())
            for p in params:
                h = torch.tanh(h * p + 0.1)
                loss = loss + (h * h).sum()
        with piece("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with piece("opt"):
            opt.step()
    return step, {"unprofiled_steps": 5}


def matmul_chain() -> tuple[Step, dict[str, object]]:
    """A wide MLP at batch 512: large GEMMs, compute-bound on the CPU."""
    model = nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.ReLU()) for _ in range(4)], nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(512, 1024), torch.randint(0, 10, (512,))
    return lambda: sgd_step(model, opt, x, y), {"unprofiled_steps": 2}


def compiled(recompile: bool) -> tuple[Step, dict[str, object]]:
    """A torch.compile'd (Inductor, CPU) MLP: after warm-up (steady), or with ``dynamic=False`` and a batch one
    larger every step (a recompilation each step)."""
    torch._dynamo.config.cache_size_limit = 64
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512), nn.Linear(512, 512), nn.GELU(),
                          nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    cm = torch.compile(model, dynamic=False) if recompile else torch.compile(model)
    batch = [16]

    def step() -> None:
        batch[0] += recompile
        bs = batch[0] if recompile else 64
        with piece("step"):
            sgd_step(cm, opt, torch.randn(bs, 256), torch.randint(0, 10, (bs,)))
    for _ in range(1 if recompile else 3):  # warm-up: the first compilation
        step()
    return step, {"unprofiled_steps": 1 if recompile else 5}


class StatsMLP(nn.Module):
    """The compiled MLP of :func:`compiled`, logging an activation statistic into a list in its forward."""

    def __init__(self, log: bool) -> None:
        super().__init__()
        self.a = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512), nn.Linear(512, 512), nn.GELU())
        self.b = nn.Linear(512, 10)
        self.log, self.stats = log, list[float]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        if self.log:  # Dynamo guards on len(self.stats): a recompile every call, until the recompile limit
            self.stats.append(h.abs().mean().item())
        return self.b(h)


def unprofiled_ms(step: Step, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        step()
        out.append(round((time.perf_counter() - t) * 1e3, 2))
    return out


def compile_fallback() -> tuple[Step, dict[str, object]]:
    """:class:`StatsMLP` compiled with the list append in its forward: each warm-up call recompiles until
    Dynamo's recompile limit, then the frame runs eager under the wrapper. Also timed without the profiler:
    the same model eager (no torch.compile) and compiled without the append (the frame compiled)."""
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    timings: dict[str, object] = {"recompile_limit": torch._dynamo.config.recompile_limit}
    for name, compile_it in (("eager", False), ("compiled_no_append", True)):
        plain = StatsMLP(False)
        step = partial(sgd_step, torch.compile(plain) if compile_it else plain,
                       torch.optim.SGD(plain.parameters(), lr=1e-3), x, y)
        unprofiled_ms(step, 3)  # warm-up (the compilation)
        timings[f"{name}_step_ms"] = unprofiled_ms(step, 10)
    model = StatsMLP(True)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    cm = torch.compile(model)

    def logged() -> None:
        with piece("step"):
            sgd_step(cm, opt, x, y)
    timings["warmup_step_ms"] = unprofiled_ms(logged, 12)  # recompiles until the limit, then eager
    return logged, {"unprofiled_steps": 10, "extra": timings}


CASES: dict[str, Callable[[], tuple[Step, dict[str, object]]]] = {
    "compile_steady": lambda: compiled(False), "compile_recompile": lambda: compiled(True),
    "compile_fallback": compile_fallback,
    "gc_pause": gc_pause, "ckpt_every_step": ckpt_every_step, "alloc_churn": alloc_churn,
    "tiny_ops": tiny_ops, "matmul_chain": matmul_chain}


def ddp_rank(rank: int, world: int, out: str) -> None:
    """One gloo rank: 8 x Linear(1024) (34 MB of gradients), batch 2, the same data on both ranks."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.ReLU())
                                                    for _ in range(8)]))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 1024)

    def step(sync: bool = True) -> None:
        if sync:
            sgd_step(model, opt, x, None)
            return
        with model.no_sync():
            sgd_step(model, opt, x, None)
    timings: dict[str, object] = {}
    for mode in (True, False):
        dist.barrier()
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            step(mode)
            ts.append(round((time.perf_counter() - t) * 1e3, 2))
        timings["sync_ms" if mode else "no_sync_ms"] = ts
    dist.barrier()
    timings.update(run(step, Path(out), unprofiled_steps=0, worker_name=f"rank{rank}"))
    (Path(out) / f"timing_rank{rank}.json").write_text(json.dumps(timings, indent=1))
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", required=True, choices=[*CASES, "ddp_gloo"])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out) / args.case
    if args.case == "ddp_gloo":
        mp.spawn(ddp_rank, args=(2, str(out)), nprocs=2)
        return
    torch.manual_seed(0)
    torch.set_num_threads(1)
    step, opts = CASES[args.case]()
    timings = run(step, out, unprofiled_steps=int(str(opts.get("unprofiled_steps", 3))),
                  profile_memory=bool(opts.get("profile_memory", False)))
    extra = opts.get("extra")
    if isinstance(extra, dict):  # the case's own timings (compile_fallback's runs without the profiler)
        timings.update(extra)
    (out / "timing.json").write_text(json.dumps(timings, indent=1))


if __name__ == "__main__":
    main()
