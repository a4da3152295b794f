"""Capture the real CPU traces committed as fixtures (run from the repo root, needs torch).

    .venv/bin/python tests/data/make_fixtures.py [default] [ddp]

default  ``stepscope/data/default_trace.pt.trace.json.gz``: the demo CNN trained with its heavy
         per-sample preprocessing in the main process (``num_workers=0``), so it is input-bound;
         ``record_shapes``, ``profile_memory``, ``with_stack``, 4 active ProfilerSteps, system
         counter tracks. The embedded default of ``stepscope analyze``.
ddp      ``tests/data/cpu_ddp_2rank/worker{0,1}.<ts>.pt.trace.json.gz``: two spawned ranks of a
         DistributedDataParallel MLP on gloo, one run dir as ``tensorboard_trace_handler``
         lays it out, 3 active steps each.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from stepscope.collect import ProfileOptions, profile
from stepscope.collect.demo_workload import AugmentedImages, make_model

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TRACE = ROOT / "stepscope" / "data" / "default_trace.pt.trace.json.gz"
DDP_DIR = ROOT / "tests" / "data" / "cpu_ddp_2rank"


def make_default(batch_size: int = 16) -> Path:
    """Capture the input-bound single-process trace and install it as the embedded default."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = DataLoader(AugmentedImages(batch_size * 8), batch_size=batch_size, num_workers=0)
    opts = ProfileOptions(wait=1, warmup=1, active=4, record_shapes=True, profile_memory=True,
                          with_stack=True, with_modules=True)
    with tempfile.TemporaryDirectory() as tmp:
        with profile(tmp, options=opts, worker_name="default", sample_interval_s=0.02) as prof:
            for images, labels in loader:
                opt.zero_grad(set_to_none=True)
                loss_fn(model(images), labels).backward()
                opt.step()
                prof.step()
        (written,) = prof.trace_files
        DEFAULT_TRACE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(written, DEFAULT_TRACE)
    return DEFAULT_TRACE


def _ddp_rank(rank: int, world: int, port: int, out_dir: str) -> None:
    """One rank: a DDP MLP on gloo, light per-sample preprocessing, 6 steps, 3 recorded."""
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = AugmentedImages(8 * 6, seed=rank)
    loader = DataLoader(data, batch_size=8, num_workers=0)
    opts = ProfileOptions(wait=1, warmup=1, active=3, record_shapes=True, profile_memory=True,
                          with_stack=False, with_modules=True)
    with profile(out_dir, options=opts, worker_name=f"worker{rank}", sample_interval_s=0.02) as prof:
        for images, labels in loader:
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(images), labels).backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()


def make_ddp(world: int = 2) -> Path:
    """Capture the 2-rank gloo run into ``tests/data/cpu_ddp_2rank`` (replacing what is there)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    shutil.rmtree(DDP_DIR, ignore_errors=True)
    DDP_DIR.mkdir(parents=True)
    torch.multiprocessing.spawn(_ddp_rank, args=(world, port, str(DDP_DIR)), nprocs=world, join=True)
    return DDP_DIR


def main(argv: list[str]) -> None:
    which = set(argv) or {"default", "ddp"}
    if "default" in which:
        path = make_default()
        print(f"{path}: {os.path.getsize(path) / 1024:.0f} KB")
    if "ddp" in which:
        for path in sorted(make_ddp().iterdir()):
            print(f"{path}: {os.path.getsize(path) / 1024:.0f} KB")


if __name__ == "__main__":
    main(sys.argv[1:])
