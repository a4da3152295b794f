"""Match the rows of two runs by name, through strings, never by row order.

Each run has its own :class:`~stepscope.model.strings.StringPool`, so ids mean nothing across runs:
rows are matched on their decoded keys (the name, optionally with the input shapes), after an
optional :class:`NameMap` has renamed names that differ between vendors (GPU ↔ NPU, CUDA ↔ ROCm).

Alignment is vectorised: both key arrays go through one ``np.unique``, and each unique key gets
its row on either side (``-1`` when the key is absent there):

=============  ==========================================================
``keys``       every key seen on either side, as ``np.unique`` sorts them
``base_row``   row of the key in the base table, -1 = only in NEW (added)
``new_row``    row of the key in the new table, -1 = only in BASE (removed)
=============  ==========================================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from stepscope.errors import UsageError

Obj = npt.NDArray[np.object_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: separates the name from the input shapes inside a key (never appears in a name)
KEY_SEP = "\x1f"
#: table names a mapping file section may target; "*" applies to every table
TABLES = ("operators", "kernels", "modules", "memory", "runtime", "categories")

# The built-in cross-vendor table (used with ``--name-map builtin``): NPU (Ascend) and ROCm names
# mapped onto one canonical name, so the same work matches across vendors. Kernels are mapped to
# families on purpose: vendors split the same work into differently named kernels.
_BUILTIN_OPS: dict[str, str] = {
    "npu::npu_fusion_attention": "aten::_scaled_dot_product_flash_attention",
    "npu::npu_fusion_attention_grad": "aten::_scaled_dot_product_flash_attention_backward",
    "npu::npu_rms_norm": "aten::rms_norm",
    "npu::npu_rms_norm_backward": "aten::rms_norm_backward",
    "HcclAllreduce": "nccl:all_reduce",
    "HcclAllGather": "nccl:all_gather",
    "HcclReduceScatter": "nccl:reduce_scatter",
    "HcclBroadcast": "nccl:broadcast",
    "HcclAlltoAll": "nccl:all_to_all",
}
_BUILTIN_KERNELS: list[tuple[str, str]] = [
    (r"(?i)^(hcom_allreduce|nccl(dev)?kernel_allreduce)", "[comm] all_reduce"),
    (r"(?i)^(hcom_allgather|nccl(dev)?kernel_allgather)", "[comm] all_gather"),
    (r"(?i)^(hcom_reducescatter|nccl(dev)?kernel_reducescatter)", "[comm] reduce_scatter"),
    (r"(?i)^(hcom_broadcast|nccl(dev)?kernel_broadcast)", "[comm] broadcast"),
    (r"(?i)^(hcom_(send|receive|alltoall)|nccl(dev)?kernel_(sendrecv|alltoall))", "[comm] send_recv"),
    (r"(?i)^(flashattentionscore|.*(flash|fmha|attn_fwd|attn_bwd))", "[family] attention"),
    (r"(?i)^(matmul(v\d)?|batchmatmul(v\d)?|cijk_|.*gemm|.*cutlass.*(gemm|wgrad|dgrad))", "[family] gemm"),
    (r"(?i)^(conv2d|conv3d)|.*(implicit_convolve|conv2d|winograd|cudnn.*conv|miopen.*conv)",
     "[family] convolution"),
    (r"(?i)(layernorm|layer_norm|rmsnorm|rms_norm)", "[family] normalization"),
    (r"(?i)softmax", "[family] softmax"),
]

_BUILTIN_RUNTIME: list[tuple[str, str]] = [
    (r"^(?:cuda|hip)(\w+?)(?:_v\d+)?$", r"cuda|hip:\1"),  # cudaLaunchKernel ↔ hipLaunchKernel
    (r"^(?:aclrt|acl)(\w+)$", r"cuda|hip:\1"),
]


@dataclass(frozen=True)
class NameMap:
    """Renames applied to names before matching: exact entries first, then regexes (first match wins).

    ``exact`` / ``patterns`` hold entries per table name, ``"*"`` for every table.
    """

    exact: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    patterns: Mapping[str, Sequence[tuple[re.Pattern[str], str]]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not any(self.exact.values()) and not any(self.patterns.values())

    def rename(self, table: str, name: str) -> str:
        """The canonical name of ``name`` in ``table`` (itself when no entry applies)."""
        for section in (table, "*"):
            hit = self.exact.get(section, {}).get(name)
            if hit is not None:
                return hit
        for section in (table, "*"):
            for pat, target in self.patterns.get(section, ()):
                m = pat.search(name)
                if m is not None:
                    return m.expand(target) if "\\" in target else target
        return name

    def apply(self, table: str, names: Obj) -> Obj:
        """Canonical names of a name column; each unique name is looked at once."""
        if self.empty or len(names) == 0:
            return names
        uniq, inv = np.unique(texts(names), return_inverse=True)
        mapped = np.array([self.rename(table, str(n)) for n in uniq] + [""], dtype=object)[:-1]
        return np.asarray(mapped[inv.reshape(-1)], dtype=object)

    def merged(self, other: NameMap) -> NameMap:
        """This map with ``other``'s entries taking precedence."""
        exact = {k: {**self.exact.get(k, {}), **other.exact.get(k, {})} for k in {*self.exact, *other.exact}}
        pats = {k: [*other.patterns.get(k, ()), *self.patterns.get(k, ())]
                for k in {*self.patterns, *other.patterns}}
        return NameMap(exact, pats)


def builtin_name_map() -> NameMap:
    """The small built-in GPU ↔ NPU / CUDA ↔ ROCm table (opt-in: it merges kernels into families)."""
    return NameMap({"operators": dict(_BUILTIN_OPS)},
                   {"kernels": [(re.compile(p), t) for p, t in _BUILTIN_KERNELS],
                    "runtime": [(re.compile(p), t) for p, t in _BUILTIN_RUNTIME]})


def load_name_map(path: str | Path) -> NameMap:
    """Read a user mapping file (JSON).

    Either a flat object ``{"name on one side": "canonical name", ...}`` applied to every table, or
    an object of sections keyed by table name (``operators``, ``kernels``, ``modules``, ``memory``,
    ``runtime``, or ``"*"``), each such a flat object. A key written ``"re:<regex>"`` is a regular
    expression matched anywhere in the name (``re.search``); its target may use the groups of the
    match (``\\1``), e.g. ``{"re:^hip(\\w+)": "cuda\\1"}``.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the name map: {exc}", p) from exc
    if not isinstance(doc, dict):
        raise UsageError("a name map must be a JSON object", p)
    sectioned = all(isinstance(v, dict) for v in doc.values()) and bool(doc)
    sections = doc if sectioned else {"*": doc}
    exact: dict[str, dict[str, str]] = {}
    pats: dict[str, list[tuple[re.Pattern[str], str]]] = {}
    for section, entries in sections.items():
        if section not in (*TABLES, "*"):
            raise UsageError(f"unknown name-map section {section!r} (use {', '.join(TABLES)} or '*')", p)
        for src, dst in entries.items():
            if not isinstance(dst, str):
                raise UsageError(f"name-map entry {src!r} must map to a string", p)
            if src.startswith("re:"):
                pats.setdefault(section, []).append((_compile(src[3:], p), dst))
            else:
                exact.setdefault(section, {})[src] = dst
    return NameMap(exact, pats)


def _compile(pattern: str, path: Path) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"bad regex {pattern!r} in the name map: {exc}", path) from exc


def make_keys(names: Obj, shapes: Obj | None = None) -> Obj:
    """Match keys: the name, or ``name KEY_SEP shapes`` when matching by input shapes too."""
    if shapes is None:
        return names
    return texts([f"{n}{KEY_SEP}{s}" for n, s in zip(names.tolist(), shapes.tolist())])


def texts(values: Obj | list[str]) -> Obj:
    """Keys as an object array of str: a fixed-width ``str`` array takes 4 bytes per character of the
    longest key for every key (one 200 MB kernel name made a diff take 12 GB)."""
    out = np.empty(len(values), dtype=object)
    out[:] = [v if type(v) is str else str(v) for v in (values.tolist() if isinstance(values, np.ndarray) else values)]
    return out


def group_by_key(keys: Obj, *columns: F64) -> tuple[Obj, I64, list[F64]]:
    """Sum rows sharing a key (several names may map to one canonical name).

    Returns the unique keys, the row of each key's largest first column (its representative row,
    for display names) and the summed columns.
    """
    if len(keys) == 0:
        return keys, np.zeros(0, np.int64), [np.zeros(0, np.float64) for _ in columns]
    uniq, inv = np.unique(texts(keys), return_inverse=True)
    inv = inv.reshape(-1)
    sums = [np.bincount(inv, weights=c, minlength=len(uniq)).astype(np.float64) for c in columns]
    first = columns[0] if columns else np.zeros(len(keys))
    order = np.lexsort((-first, inv))  # rows by key, largest value first within each key
    starts = np.searchsorted(inv[order], np.arange(len(uniq)))
    return np.asarray(uniq, dtype=object), order[starts].astype(np.int64), sums


@dataclass(frozen=True)
class Alignment:
    """Which base row and which new row each key has (``-1`` = absent on that side)."""

    keys: Obj
    base_row: I64
    new_row: I64

    @property
    def matched(self) -> npt.NDArray[np.bool_]:
        return np.asarray((self.base_row >= 0) & (self.new_row >= 0))

    @property
    def added(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.base_row < 0)

    @property
    def removed(self) -> npt.NDArray[np.bool_]:
        return np.asarray(self.new_row < 0)


def align(base_keys: Obj, new_keys: Obj) -> Alignment:
    """Align two arrays of unique keys by value."""
    nb = len(base_keys)
    both = np.concatenate([texts(base_keys), texts(new_keys)])
    if len(both) == 0:
        empty = np.zeros(0, np.int64)
        return Alignment(np.zeros(0, dtype=object), empty, empty)
    uniq, inv = np.unique(both, return_inverse=True)
    inv = inv.reshape(-1)
    base_row = np.full(len(uniq), -1, np.int64)
    new_row = np.full(len(uniq), -1, np.int64)
    base_row[inv[:nb]] = np.arange(nb)
    new_row[inv[nb:]] = np.arange(len(both) - nb)
    return Alignment(np.asarray(uniq, dtype=object), base_row, new_row)
