"""Write a synthetic CUDA caching-allocator snapshot (the shape ``torch.cuda.memory._dump_snapshot``
writes) of about the size asked for, to measure ``stepscope memory`` on large ones::

    python bench/make_snapshot.py OUT.pickle --mb 1024
    /usr/bin/time -v stepscope memory OUT.pickle        # wall time and maximum RSS

Above 64 MiB the file is written without holding it: a 4 MiB snapshot is pickled, one whole batch of
its entries list (``MARK`` 1,000 entries ``APPENDS``, after the first batch, so every memo reference
in it is to a key or action string of the first) is repeated to the size asked, and the opcodes are
framed again in 64 KiB frames, as the pickler does: the same bytes per entry as a whole pickle.

Each trace entry carries its own frame dicts (as torch builds them: equal strings, distinct
objects), 12-20 frames from a training step's forward / backward / optimizer stacks; allocations
are freed in LIFO bursts so that the live bytes rise and fall.
"""

from __future__ import annotations

import argparse
import pickle
import pickletools
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


FRAME_BYTES = 64 << 10


def _framed(ops: list[bytes]) -> bytes:
    """Opcodes' bytes in FRAMEs of at least 64 KiB (the last one shorter), cut between opcodes."""
    out, cur, n = [], [], 0
    for op in ops:
        cur.append(op)
        n += len(op)
        if n >= FRAME_BYTES:
            out += [b"\x95" + n.to_bytes(8, "little"), *cur]
            cur, n = [], 0
    if cur:
        out += [b"\x95" + n.to_bytes(8, "little"), *cur]
    return b"".join(out)


def write_repeated(out: str, target_bytes: int) -> None:
    """A snapshot of about ``target_bytes``: the second batch of a small one's entries, repeated."""
    base = pickle.dumps({"segments": [], "device_traces": [entries(4 << 20)], "allocator_settings": {}}, protocol=4)
    listed = [(op.name, pos) for op, _, pos in pickletools.genops(base)]
    ops = []  # (name, bytes) of every opcode but PROTO and FRAME
    for (name, pos), (_, nxt) in zip(listed, [*listed[1:], ("END", len(base))]):
        if name not in ("PROTO", "FRAME"):
            ops.append((name, base[pos:nxt] if name != "STOP" else b"."))
    marks, batches = [], []
    for i, (name, _) in enumerate(ops):
        if name == "MARK":
            marks.append(i)
        elif name in ("APPENDS", "SETITEMS", "TUPLE"):
            m = marks.pop()
            if name == "APPENDS" and i - m > 1000:
                batches.append((m, i + 1))
    lo, hi = batches[1]  # the entries list's second batch
    middle = _framed([b for _, b in ops[lo:hi]])
    with open(out, "wb") as fh:
        fh.write(b"\x80\x04" + _framed([b for _, b in ops[:lo]]))
        for _ in range(max(1, (target_bytes - len(base)) // len(middle))):
            fh.write(middle)
        fh.write(_framed([b for _, b in ops[hi:]]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mb", type=int, default=1024)
    a = ap.parse_args()
    if a.mb > 64:
        write_repeated(a.out, a.mb << 20)
        return
    doc = {"segments": [], "device_traces": [entries(a.mb << 20)], "allocator_settings": {}}
    with open(a.out, "wb") as fh:
        pickle.dump(doc, fh, protocol=4)


if __name__ == "__main__":
    main()
