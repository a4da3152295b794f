"""Capture ops.pt.trace.json.gz: a few GEMM, convolution, attention and elementwise ops on CPU,
profiled with record_shapes=True and with_flops=True (PyTorch counts FLOPs for mm / addmm / bmm /
baddbmm / conv2d / mul / add). Run: python capture.py (CPU PyTorch; made with 2.13).

PyTorch 2.13's chrome-trace export leaves the FLOPs it computed out of the file (older exports
wrote them as the op's "flops" arg); this script writes each op's count, as PyTorch's profiler
computed it (FunctionEvent.flops, its C++ computeFlops), into that arg, matched by External id."""

import gzip
import json
import os

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
x, w, b = torch.randn(32, 64), torch.randn(48, 64), torch.randn(48)
a3, b3, c3 = torch.randn(4, 16, 24), torch.randn(4, 24, 8), torch.randn(4, 16, 8)
img, k, kb = torch.randn(2, 3, 17, 19), torch.randn(8, 3, 3, 5), torch.randn(8)
q, kk, v = (torch.randn(2, 4, 33, 16) for _ in range(3))
with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
    for _ in range(2):
        F.linear(x, w, b)  # addmm with bias
        F.linear(x, w)  # mm
        torch.mm(x, w.t())
        torch.addmm(torch.randn(32, 48), x, w.t())
        torch.bmm(a3, b3)
        torch.baddbmm(c3, a3, b3)
        torch.matmul(a3, b3)
        F.conv2d(img, k, kb, stride=(2, 1), padding=(1, 2))
        F.conv2d(img, k, None, stride=1, padding=0, dilation=(2, 1))
        F.conv2d(torch.randn(1, 8, 9, 9), torch.randn(8, 2, 3, 3), None, padding=1, groups=4)
        F.scaled_dot_product_attention(q, kk, v)
        F.scaled_dot_product_attention(q, kk, v, is_causal=True)
        torch.mul(x, 2.0)
        torch.add(x, torch.randn(1, 64))
prof.export_chrome_trace("ops.pt.trace.json")
flops = {e.id: e.flops for e in prof.events() if e.flops}
with open("ops.pt.trace.json") as f:
    doc = json.load(f)
for ev in doc["traceEvents"]:
    n = flops.get(ev.get("args", {}).get("External id", -1)) if ev.get("cat") == "cpu_op" else None
    if n:
        ev["args"]["flops"] = n
with gzip.open("ops.pt.trace.json.gz", "wt") as dst:
    json.dump(doc, dst)
os.remove("ops.pt.trace.json")
