"""Two-rank CPU jobs (DistributedDataParallel on gloo) with one planted cause each, captured with
``torch.profiler`` as every PyTorch user does (a schedule, ``tensorboard_trace_handler`` layout via
stepscope's collector). What bounds each job was written here before any tool read the traces.

* ``skew`` — rank 1 runs an extra ~15 ms of CPU matmuls in every step before its backward (uneven
  work: a bigger shard, a slower host): it arrives last at every all-reduce and rank 0 waits for
  it there. The job is bound by that imbalance; the first finding names rank 1 (``straggler-rank``
  or ``load-imbalance``), not the input pipeline and not the communication itself.

(A twin with both ranks alike was captured too and not kept: on this 2-core machine the two
processes and their gloo threads share the cores, and one rank lagged the other in 5 of 8
all-reduces by up to 12 ms — real imbalance from contention, not the even job intended.)

    .venv/bin/python tests/data/cpu_jobs/capture.py skew
"""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from stepscope.collect import ProfileOptions, profile

HERE = Path(__file__).resolve().parent


def _rank(rank: int, world: int, port: int, out_dir: str, skew: bool) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
    extra = torch.randn(384, 384)
    opts = ProfileOptions(wait=1, warmup=1, active=4, record_shapes=True)
    with profile(out_dir, options=opts, worker_name=f"worker{rank}") as prof:
        for _ in range(6):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            if skew and rank == 1:  # the planted cause: more work on one rank before its backward
                for _ in range(12):
                    extra = torch.tanh(extra @ extra / 384.0)
            loss.backward()
            opt.step()
            prof.step()
    dist.destroy_process_group()


def capture(case: str, world: int = 2) -> Path:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = HERE / case
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    torch.multiprocessing.spawn(_rank, args=(world, port, str(out), case == "skew"), nprocs=world, join=True)
    return out


if __name__ == "__main__":
    for name in sys.argv[1:] or ["skew"]:
        print(name, sorted(p.name for p in capture(name).iterdir()))
