"""Pipeline parallelism: the stages of each pipeline, each stage's bubble per step, and the stage imbalance.

From every rank's :class:`~stepscope.analysis.pipeline_records.PipelineRecord` (point-to-point
kernels, per-window busy / other / warm-up / cool-down / recv-wait times):

1. **Pipelines and stage order.** The ranks that run point-to-point kernels form chains, found in
   this order of trust (``order``):

   * ``peers``: the ranks each p2p kernel names as its other end (``Dst Rank`` / ``Src Rank``,
     PyTorch ≥ 2.4), chained into paths, the end that starts work first as stage 0;
   * ``group``: a process group of ≥ 3 ranks named by the point-to-point kernels (``Process Group
     Ranks``) is a pipeline group, its stages in the group's rank order (Megatron-LM's and
     torchtitan's pipeline groups list the ranks stage by stage);
   * ``pairs``: 2-rank groups (one per neighbour pair, as DeepSpeed's pipeline engine makes them)
     chained into a path; oriented so that the end that starts work first is stage 0;
   * ``timing``: ranks whose kernels name no group, ordered by the start of their first device
     work (in a pipeline, stage k starts once stage k − 1 has sent it the first micro-batch).

2. **Per stage and step** (the steps every stage of the pipeline has, by ProfilerStep number):
   ``busy`` (compute kernels), ``other`` (collectives, copies), ``bubble`` = window − busy − other —
   the time the stage's device had nothing to do but wait — split into ``warmup`` (before its first
   work: filling the pipeline), ``cooldown`` (after its last: draining it) and ``interior`` (the
   gaps between); ``p2p_wait`` is the part of the bubble spent inside a recv / send kernel.

3. **Imbalance and the critical bubble.** ``imbalance_pct`` = the busiest stage's busy time over
   the stages' mean − 1 (every micro-batch passes the slowest stage: balancing the stages to the
   mean shortens the step by about that much). The *critical bubble* is, per step, the bubble of the
   busiest stage: the step cannot be shorter than that stage's work, and any time it sits idle in
   the step is pipeline fill / drain on the critical path — what more micro-batches or an
   interleaved schedule can remove.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.frames import TableResult
from stepscope.analysis.pipeline_records import PipelineRecord, pipeline_record
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
S = npt.NDArray[np.object_]
Chain = tuple[tuple[int, ...], str]
#: per-step quantities of a stage, in this order in the (stage, step, quantity) cube
QUANTITIES = ("window", "busy", "other", "warmup", "cooldown", "p2p_wait", "p2p_count")


@dataclass(frozen=True)
class StageRows(TableResult):
    """One row per (pipeline, stage): ns per average step over the pipeline's common steps."""

    pipeline: I64
    stage: I64
    rank: I64
    step_ns: I64
    busy_ns: I64
    other_ns: I64
    bubble_ns: I64
    warmup_ns: I64
    cooldown_ns: I64
    interior_ns: I64
    p2p_wait_ns: I64
    bubble_pct: F64  # of the stage's step
    p2p_per_step: F64

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StageSteps(TableResult):
    """One row per (pipeline, stage, step): the same times, step by step."""

    pipeline: I64
    stage: I64
    rank: I64
    step: I64
    step_ns: I64
    busy_ns: I64
    bubble_ns: I64
    warmup_ns: I64
    cooldown_ns: I64
    p2p_wait_ns: I64

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PipelineRows(TableResult):
    """One row per pipeline."""

    pipeline: I64
    ranks: S  # "0,1,2,3": its ranks in stage order
    order: S  # how the order was found: "peers" | "group" | "pairs" | "timing"
    stage_count: I64
    step_count: I64
    step_ns: I64  # the stages' mean step
    busy_max_ns: I64  # the busiest stage's busy time per step
    busy_mean_ns: I64
    slowest_stage: I64
    imbalance_pct: F64  # busy_max / busy_mean − 1
    critical_bubble_ns: I64  # per step, the busiest stage's bubble (mean over steps)
    critical_bubble_pct: F64  # of the step

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Pipeline:
    """The job's pipelines, their stages and per-step stage times (see the module docstring)."""

    pipelines: PipelineRows
    stages: StageRows
    steps: StageSteps


def compute_pipeline(trace: Trace) -> Pipeline:
    return combine_pipeline({r: pipeline_record(trace, r) for r in trace.rank_ids})


def combine_pipeline(records: Mapping[int, PipelineRecord | None]) -> Pipeline:
    """The registry's cross-rank step, from every rank's :func:`pipeline_record`."""
    recs = {r: x for r, x in records.items() if x is not None}
    if len(recs) < 2:
        raise NotApplicable("fewer than two ranks send and receive point to point on a device: no pipeline")
    chains = find_chains(recs)
    got = [_chain_tables(i, chain, order, recs) for i, (chain, order) in enumerate(chains)]  # per pipeline
    parts = [p for p in got if p is not None]
    if not parts:
        raise NotApplicable("the pipeline's stages share no profiled step")
    cat = [{k: np.concatenate([p[j][k] for p in parts]) for k in parts[0][j]} for j in range(3)]
    return Pipeline(PipelineRows(**cat[0]), StageRows(**cat[1]), StageSteps(**cat[2]))


def find_chains(recs: Mapping[int, PipelineRecord]) -> list[Chain]:
    """The pipelines (ranks in stage order) and how each order was found (see the module docstring)."""
    chains: list[Chain] = []
    placed: set[int] = set()
    for path in _paths(recs, placed, [(r, p) for r, rec in recs.items() for p in rec.peers]):  # a few paths
        chains.append((path, "peers"))
        placed.update(path)
    lists = sorted({g for rec in recs.values() for g in map(_ranks_of, rec.groups) if len(g) >= 3})
    for group in lists:  # distinct pipeline groups
        chain = tuple(r for r in group if r in recs and r not in placed)
        if len(chain) >= 2:
            chains.append((chain, "group"))
            placed.update(chain)
    pairs = [g for rec in recs.values() for g in map(_ranks_of, rec.groups) if len(g) == 2]
    for path in _paths(recs, placed, [(g[0], g[1]) for g in pairs]):  # a few paths
        chains.append((path, "pairs"))
        placed.update(path)
    rest = [r for r in recs if r not in placed]
    if len(rest) >= 2:
        chains.append((_by_first_work(rest, recs), "timing"))
    return chains


def _ranks_of(text: str) -> tuple[int, ...]:
    try:
        got = json.loads(text)
    except ValueError:
        return ()
    ok = isinstance(got, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in got)
    return tuple(got) if ok else ()


def _paths(recs: Mapping[int, PipelineRecord], placed: set[int], edges: list[tuple[int, int]]
           ) -> list[tuple[int, ...]]:
    """Paths of rank-to-rank edges among the ranks not yet placed, each oriented by the first work
    (components that are no path — a ring, a star — are left to the next way)."""
    adj: dict[int, set[int]] = {}
    for a, b in edges:  # per edge
        if a != b and {a, b} <= recs.keys() and not {a, b} & placed:
            adj.setdefault(a, set()).add(b)
            adj.setdefault(b, set()).add(a)
    paths, seen = [], set()
    for start in sorted(adj):  # per rank with an edge
        if start in seen or len(adj[start]) != 1:
            continue
        path = [start]
        while len(path) == 1 or len(adj[path[-1]]) == 2:
            nxt = [n for n in adj[path[-1]] if n not in path]
            if not nxt:
                break
            path.append(nxt[0])
        seen.update(path)
        if all(len(adj[r]) <= 2 for r in path):
            first = recs[path[0]].first_work_ns, recs[path[-1]].first_work_ns
            late_start = first[0] < 0 or (0 <= first[1] < first[0])
            paths.append(tuple(path[::-1] if late_start else path))
    return paths


def _by_first_work(ranks: list[int], recs: Mapping[int, PipelineRecord]) -> tuple[int, ...]:
    never = np.iinfo(np.int64).max
    return tuple(sorted(ranks, key=lambda r: (recs[r].first_work_ns if recs[r].first_work_ns >= 0 else never, r)))


def _cube(chain: tuple[int, ...], recs: Mapping[int, PipelineRecord]) -> tuple[I64, I64] | None:
    """(stages × common steps × QUANTITIES) of a chain, and the common step numbers; None when none."""
    common = recs[chain[0]].step
    for r in chain[1:]:  # per stage
        common = np.intersect1d(common, recs[r].step)
    if len(common) == 0:
        return None
    cube = np.zeros((len(chain), len(common), len(QUANTITIES)), np.int64)
    for i, r in enumerate(chain):  # per stage
        rec = recs[r]
        pos = np.flatnonzero(np.isin(rec.step, common))
        pos = pos[np.argsort(rec.step[pos], kind="stable")]
        _, first = np.unique(rec.step[pos], return_index=True)
        pos = pos[first]
        cube[i] = np.stack([getattr(rec, f"{q}_ns" if q != "p2p_count" else q)[pos] for q in QUANTITIES], axis=1)
    return cube, common.astype(np.int64)


def _chain_tables(index: int, chain: tuple[int, ...], order: str, recs: Mapping[int, PipelineRecord]
                  ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
    got = _cube(chain, recs)
    if got is None:
        return None
    cube, steps = got
    q = {name: cube[:, :, j] for j, name in enumerate(QUANTITIES)}  # (stage, step) each
    bubble = np.maximum(q["window"] - q["busy"] - q["other"], 0)
    n_stage, n_step = bubble.shape
    stage = np.arange(n_stage, dtype=np.int64)
    mean = {k: np.round(v.mean(axis=1)).astype(np.int64) for k, v in {**q, "bubble": bubble}.items()}
    interior = np.maximum(mean["bubble"] - mean["warmup"] - mean["cooldown"], 0)
    stages = {"pipeline": np.full(n_stage, index, np.int64), "stage": stage, "rank": np.array(chain, np.int64),
              "step_ns": mean["window"], "busy_ns": mean["busy"], "other_ns": mean["other"],
              "bubble_ns": mean["bubble"], "warmup_ns": mean["warmup"], "cooldown_ns": mean["cooldown"],
              "interior_ns": interior, "p2p_wait_ns": mean["p2p_wait"],
              "bubble_pct": 100.0 * mean["bubble"] / np.maximum(mean["window"], 1),
              "p2p_per_step": q["p2p_count"].mean(axis=1)}
    per_step = {"pipeline": np.full(bubble.size, index, np.int64), "stage": np.repeat(stage, n_step),
                "rank": np.repeat(np.array(chain, np.int64), n_step), "step": np.tile(steps, n_stage),
                "step_ns": q["window"].ravel(), "busy_ns": q["busy"].ravel(), "bubble_ns": bubble.ravel(),
                "warmup_ns": q["warmup"].ravel(), "cooldown_ns": q["cooldown"].ravel(),
                "p2p_wait_ns": q["p2p_wait"].ravel()}
    busiest = q["busy"].argmax(axis=0)  # per step
    critical = round(float(bubble[busiest, np.arange(n_step)].mean()))
    busy_mean = float(mean["busy"].mean())
    step_ns = round(float(mean["window"].mean()))
    slowest = int(mean["busy"].argmax())
    row = {"pipeline": [index], "ranks": [",".join(map(str, chain))], "order": [order], "stage_count": [n_stage],
           "step_count": [n_step], "step_ns": [step_ns], "busy_max_ns": [int(mean["busy"][slowest])],
           "busy_mean_ns": [round(busy_mean)], "slowest_stage": [slowest],
           "imbalance_pct": [100.0 * (mean["busy"][slowest] / busy_mean - 1) if busy_mean > 0 else 0.0],
           "critical_bubble_ns": [critical], "critical_bubble_pct": [100.0 * critical / max(step_ns, 1)]}
    types = {"ranks": object, "order": object, "imbalance_pct": np.float64, "critical_bubble_pct": np.float64}
    pipeline = {k: np.array(v, dtype=types.get(k, np.int64)) for k, v in row.items()}
    return pipeline, stages, per_step
