"""Write a synthetic CUDA caching-allocator snapshot (the shape ``torch.cuda.memory._dump_snapshot``
writes) of about the size asked for, to measure ``stepscope memory`` on large ones::

    python bench/make_snapshot.py OUT.pickle --mb 1024
    /usr/bin/time -v stepscope memory OUT.pickle        # wall time and maximum RSS

Each trace entry carries its own frame dicts (as torch builds them: equal strings, distinct
objects), 12-20 frames from a training step's forward / backward / optimizer stacks; allocations
are freed in LIFO bursts so that the live bytes rise and fall.
"""

from __future__ import annotations

import argparse
import pickle
import random

STACKS = [
    [("torch/nn/modules/linear.py", "forward"), ("torch/nn/modules/module.py", "_call_impl")],
    [("torch/autograd/graph.py", "_engine_run_backward"), ("torch/_tensor.py", "backward")],
    [("torch/optim/adam.py", "_init_group"), ("torch/optim/adam.py", "step")],
    [("/src/data.py", "load_batch")],
]


def _frames(rng: random.Random) -> list[dict[str, object]]:
    head = rng.choice(STACKS)
    depth = rng.randint(10, 18)
    out = [{"filename": "/venv/lib/python3.11/site-packages/" + f, "line": rng.randint(1, 2000), "name": n}
           for f, n in head]
    out += [{"filename": f"/src/model/layer{k % 7}.py", "line": 10 + k, "name": f"block{k % 5}"} for k in range(depth)]
    return [*out, {"filename": "/src/train.py", "line": 42, "name": "main"}]


def entries(target_bytes: int, seed: int = 0) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    live: list[tuple[int, int]] = []
    addr, t, size = 0x7F0000000000, 1_000_000, 0
    while size < target_bytes:
        if live and rng.random() < 0.48:
            a, n = live.pop()
            e = {"action": "free_completed", "addr": a, "size": n, "stream": 0, "time_us": t, "frames": _frames(rng)}
        else:
            n = rng.choice((512, 4096, 1 << 20, 16 << 20))
            addr += n
            live.append((addr, n))
            e = {"action": "alloc", "addr": addr, "size": n, "stream": 0, "time_us": t, "frames": _frames(rng)}
        out.append(e)
        t += rng.randint(1, 50)
        size += 1000  # ~1 kB of pickle per entry with its frames (checked on the output)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mb", type=int, default=1024)
    a = ap.parse_args()
    doc = {"segments": [], "device_traces": [entries(a.mb << 20)], "allocator_settings": {}}
    with open(a.out, "wb") as fh:
        pickle.dump(doc, fh, protocol=4)


if __name__ == "__main__":
    main()
