"""A dense 19.3 M-parameter embedding trained with Adam on the CPU: the fused_embed pair.

    python embed_adam.py {loop|fused} OUT_DIR

``loop``: ``Adam(foreach=False)``, the per-parameter for-loop (PyTorch's CPU default); ``fused``:
``Adam(fused=True)``. Profiles 4 steps (``schedule(wait=1, warmup=1, active=4)``, shapes recorded) into
OUT_DIR with ``tensorboard_trace_handler``, after timing 6 steps without the profiler (``timing.json``
beside the trace: the median of the unprofiled steps and of their parts).
"""

import json
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

torch.set_num_threads(1)
torch.manual_seed(0)
mode, out = sys.argv[1], Path(sys.argv[2])


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(300_000, 64)
        self.mlp = nn.Sequential(nn.Linear(64 * 8, 256), nn.ReLU(), nn.Linear(256, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.emb(x).flatten(1))


model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-3, **({"foreach": False} if mode == "loop" else {"fused": True}))
parts: dict[str, list[float]] = {"fwd": [], "bwd": [], "opt": [], "step": []}


def step() -> None:
    x, y = torch.randint(0, 300_000, (256, 8)), torch.randint(0, 2, (256,))
    t0 = time.perf_counter()
    loss = nn.functional.cross_entropy(model(x), y)
    t1 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
        parts[k].append(v * 1e3)


for _ in range(2):
    step()
for v in parts.values():
    v.clear()
for _ in range(6):
    step()
timing = {f"unprofiled_{k}_ms": round(sorted(v)[len(v) // 2], 2) for k, v in parts.items()}
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=4),
             on_trace_ready=tensorboard_trace_handler(str(out), worker_name=mode), record_shapes=True) as prof:
    for _ in range(6):
        step()
        prof.step()
(out / "timing.json").write_text(json.dumps(timing, indent=1) + "\n")
print(mode, timing)
