"""torch.compile's kernels on one rank: Inductor's Triton kernels decoded from their names, and all
device work grouped by the compiled graph that launched it.

* **Kernel names.** Inductor names a generated kernel ``triton_<kind>_fused_<op>_<op>…_<n>``: the
  kind (``poi`` pointwise, ``red`` reduction, ``per`` persistent reduction, ``tem`` template — a
  GEMM / conv template —, ``for`` foreach, ``sca`` scan, ``spl`` split scan), then the aten ops fused
  into it joined by ``_``, then a counter. Op names that hold ``_`` themselves (``_to_copy``,
  ``constant_pad_nd``, ``native_layer_norm`` …) are read greedily from :data:`COMPOUND_OPS`; any
  other word is one op.
* **Launching op.** Inductor launches each Triton kernel inside a CPU op of the same name (that op
  carries ``kernel_backend``, ``kernel_hash``, ``kernel_file`` in the trace); the model links the
  kernel to it (``events.op``).
* **Compiled graph.** The innermost compiled range around the launch call: the user annotation
  ``## Call CompiledFxGraph <hash> ##`` (named by its hash), else the CPU op ``Torch-Compiled
  Region: <frame>/<recompile>``, else ``CompiledFunction`` / ``CompiledFunctionBackward``; every
  device activity under one of them, Triton or library kernel, belongs to that graph. A graph
  kernel replayed from a CUDA / HIP graph has no range in the replay trace and falls outside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.common import I64, pct, rank_rows, step_windows
from stepscope.analysis.compilation import Compilation, compute_compilation
from stepscope.analysis.dynamo_frames import DynamoFrames, compute_dynamo_frames, is_lookup
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.analysis.platform import has_device
from stepscope.model.schema import GPU_KINDS, HOST_KINDS, EventKind
from stepscope.model.trace import Trace
from stepscope.model.tree import nearest_marked_ancestor

TRITON = re.compile(r"^triton_(?:(?P<kind>[a-z]{3})_)?(?:fused(?:_(?P<ops>.*?))??)?(?:_\d+)?$")
KINDS = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template",
         "for": "foreach", "sca": "scan", "spl": "split scan"}
#: aten op names that contain ``_`` (read as one op when decoding a fused kernel name)
COMPOUND_OPS = (
    "_to_copy", "_unsafe_view", "_unsafe_index", "_softmax", "_log_softmax", "_native_batch_norm_legit",
    "_scaled_dot_product_flash_attention", "constant_pad_nd", "native_layer_norm", "native_group_norm",
    "native_batch_norm", "native_dropout", "index_put", "index_select", "index_add", "scatter_add",
    "scatter_reduce", "slice_scatter", "select_scatter", "masked_fill", "new_zeros", "new_ones", "new_empty",
    "full_like", "zeros_like", "ones_like", "empty_like", "clamp_min", "clamp_max", "avg_pool2d",
    "max_pool2d_with_indices", "upsample_nearest2d", "upsample_bilinear2d", "convolution_backward",
    "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "embedding_dense_backward", "bitwise_and", "bitwise_or", "bitwise_not", "bitwise_xor", "logical_and",
    "logical_or", "logical_not", "var_mean", "split_with_sizes", "moe_forward", "as_strided", "leaky_relu",
    "hardtanh", "log_softmax", "group_norm", "layer_norm", "batch_norm", "rms_norm", "scaled_dot_product",
    "expand_copy", "permute_copy", "view_copy", "unbind_copy", "any_all", "amax_amin", "argmax_argmin",
)
_COMPOUND = sorted(((c.split("_"), c) for c in COMPOUND_OPS), key=lambda t: -len(t[0]))
FX_GRAPH = re.compile(r"^## Call CompiledFxGraph (?P<hash>\S+)")
REGION = re.compile(r"^Torch-Compiled Region")
FUNCTION = re.compile(r"^CompiledFunction(?:Backward)?$")


def decode_kernel(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(kind, fused ops) of an Inductor Triton kernel name; None for any other name.

    >>> decode_kernel("triton_poi_fused_add_mul_0")
    ('pointwise', ('add', 'mul'))
    """
    m = TRITON.match(name)
    if m is None:
        return None
    kind = KINDS.get(m.group("kind") or "", "triton")
    words = (m.group("ops") or "").split("_") if m.group("ops") else []
    ops: list[str] = []
    i = 0
    while i < len(words):  # per word of one name
        hit = next(((len(p), c) for p, c in _COMPOUND if words[i:i + len(p)] == p), None)
        if hit is not None:
            ops.append(hit[1])
            i += hit[0]
        elif words[i]:
            ops.append(words[i])
            i += 1
        else:
            i += 1
    return kind, tuple(ops)


def is_triton_kernel(name: str) -> bool:
    return TRITON.match(name) is not None


def _is_compiled_range(name: str) -> bool:
    return bool(FX_GRAPH.match(name) or REGION.match(name) or FUNCTION.match(name))


def graph_label(name: str) -> str:
    """A compiled range's group name: ``CompiledFxGraph <hash>``, else the range's own name."""
    m = FX_GRAPH.match(name)
    return f"CompiledFxGraph {m.group('hash')}" if m else name


@dataclass(frozen=True)
class CompiledGraphs:
    """One row per compiled graph (largest device time first)."""

    name: tuple[str, ...]
    calls: I64  # ranges of this graph on the host
    kernels: I64  # device activities launched inside them
    triton_kernels: I64
    device_ns: I64
    step_share_pct: tuple[float, ...]  # device time / all step windows


@dataclass(frozen=True)
class CompiledResult:
    """Compiled kernels of one rank."""

    rank: int
    triton: NamedRows  # Inductor Triton kernels, by kernel name
    triton_kinds: tuple[str, ...]  # per distinct name of ``triton`` (``triton.names`` order)
    triton_ops: tuple[tuple[str, ...], ...]  # fused ops per distinct name
    triton_launch_op: int  # Triton kernels whose launching CPU op carries the kernel's name
    graphs: CompiledGraphs
    device_ns: int  # all device time of the rank
    window_ns: int  # all step windows (the whole trace's span without steps)
    compilation: Compilation  # the host's time compiling inside the steps (:mod:`.compilation`)
    frames: DynamoFrames  # Dynamo's cache lookups per step and the frames that ran eager (:mod:`.dynamo_frames`)

    @property
    def triton_pct(self) -> float:
        return pct(self.triton.total_ns, self.device_ns)

    @property
    def in_graphs_pct(self) -> float:
        return pct(float(self.graphs.device_ns.sum()), self.device_ns)


def compute_compiled(trace: Trace, rank: int) -> CompiledResult:
    """Triton kernels decoded, and device work per compiled graph (see the module docstring)."""
    ev, pool = trace.events, trace.strings
    gpu = rank_rows(trace, rank, tuple(int(k) for k in GPU_KINDS))
    host = rank_rows(trace, rank, tuple(int(k) for k in HOST_KINDS))
    ranges = host[pool.mask(_is_compiled_range)[ev["name"][host]]]
    tri = gpu[pool.mask(is_triton_kernel)[ev["name"][gpu]] & (ev["kind"][gpu] == EventKind.KERNEL)]
    if len(ranges) == 0 and len(tri) == 0 and not pool.mask(is_lookup)[ev["name"][host]].any():
        raise NotApplicable("no torch.compile kernels, compiled-graph ranges or Dynamo cache lookups in this trace"
                            if has_device(trace, rank)
                            else "no torch.compile compiled-graph ranges or Dynamo cache lookups in this trace")
    triton = named_rows(trace, tri)
    decoded = [decode_kernel(n) or ("triton", ()) for n in triton.names]
    op = ev["op"][tri]
    same = (op >= 0) & (ev["name"][np.maximum(op, 0)] == ev["name"][tri])
    wins = step_windows(trace, rank)
    window = int(wins.dur_ns.sum()) if len(wins) else 0
    comp = compute_compilation(trace, rank)
    return CompiledResult(rank=rank, triton=triton, triton_kinds=tuple(k for k, _ in decoded),
                          triton_ops=tuple(o for _, o in decoded), triton_launch_op=int(same.sum()),
                          graphs=_graphs(trace, gpu, ranges, window), device_ns=int(ev["dur_ns"][gpu].sum()),
                          window_ns=window, compilation=comp,
                          frames=compute_dynamo_frames(trace, host, ranges, wins, comp.compile_ns))


def _graphs(trace: Trace, gpu: I64, ranges: I64, window_ns: int) -> CompiledGraphs:
    ev, pool = trace.events, trace.strings
    marked = np.zeros(len(ev), bool)
    marked[ranges] = True
    launched = gpu[ev["launch"][gpu] >= 0]
    owner = nearest_marked_ancestor(ev["parent"], ev["launch"][launched].astype(np.int64), marked)
    inside = owner >= 0
    rows, owner = launched[inside], owner[inside]
    ids, id_inv = np.unique(ev["name"][ranges], return_inverse=True)
    labels = np.array([graph_label(str(s)) for s in pool.decode(ids)], dtype=object)  # per distinct name
    uniq, label_inv = np.unique(labels, return_inverse=True) if len(labels) else (labels, np.zeros(0, np.int64))
    range_group = label_inv.reshape(-1)[id_inv.reshape(-1)] if len(ranges) else np.zeros(0, np.int64)
    pos = np.searchsorted(ranges, owner)  # ranges are in row order
    group = range_group[pos].astype(np.int64) if len(pos) else np.zeros(0, np.int64)
    n = len(uniq)
    dev = np.bincount(group, weights=ev["dur_ns"][rows], minlength=n).astype(np.int64)
    tri = pool.mask(is_triton_kernel)[ev["name"][rows]]
    kernels = np.bincount(group, minlength=n).astype(np.int64)
    order = np.argsort(-dev, kind="stable")
    order = order[kernels[order] > 0]  # an outer range whose work all ran in an inner one is left out
    calls = np.bincount(range_group.astype(np.int64), minlength=n).astype(np.int64)
    return CompiledGraphs(
        name=tuple(str(uniq[i]) for i in order), calls=calls[order],
        kernels=kernels[order],
        triton_kernels=np.bincount(group, weights=tri, minlength=n).astype(np.int64)[order],
        device_ns=dev[order], step_share_pct=tuple(pct(float(dev[i]), window_ns) for i in order.tolist()))
