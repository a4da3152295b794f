"""``stepscope mcp``: the Model Context Protocol server (official Python SDK, stdio transport).

Each tool is a method of :class:`Tools`: it names a trace by path, reads the loaded trace from the
process's :class:`~stepscope.mcp.cache.TraceCache` and answers compact JSON text (``answers.text``).
Bad input — a missing file, an unreadable trace, an unknown view or rank, an SQL error — is the
tool's error result with the one-line message the command line prints, never a traceback.
The SDK (``pip install 'stepscope[mcp]'``) is imported only here.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from stepscope.errors import StepscopeError
from stepscope.mcp import answers, queries
from stepscope.mcp.cache import DEFAULT_CAPACITY, TraceCache

#: the tools, in the order a client lists them
TOOLS = ("overview", "findings", "view", "timeline", "sql", "diff", "whatif")

INSTRUCTIONS = """stepscope explains why a training or inference step is slow from a profiler trace
(PyTorch/Kineto JSON, a tensorboard_trace_handler run directory, Nsight Systems SQLite, Ascend).
Start with `overview` (the step, its breakdown, the verdict: what bounds the step), then `findings`
(ranked causes with evidence, estimated gain and the change to make), then `view` for a table
(kernels, operators, memory, idle, sync, ...), `timeline` for what ran in one step, `sql` for any
other question, `diff` to compare two runs, `whatif` to predict the step after a change.
Units are in the key names (_ms, _us, _ns, _bytes, _pct).
A trace is loaded once per server process; later calls on the same path are fast."""

TracePath = Annotated[str, Field(description="Trace file or run directory (absolute, or relative to the server's "
                                         "working directory / --root)")]
Rank = Annotated[int | None, Field(description="Rank (default: the first rank)")]
Top = Annotated[int, Field(description="Rows per table", ge=0, le=1000)]
StepMs = Annotated[float | None, Field(description="The step (ms) as timed without the profiler (a training log's): "
                                                   "the profiler's own cost per op is measured from it, not assumed",
                                       gt=0)]


class Tools:
    """The tools over one :class:`TraceCache` (each method is one tool; its docstring is the tool's description)."""

    def __init__(self, cache: TraceCache) -> None:
        self.cache = cache

    def _answer(self, fn: Callable[[], Any]) -> str:
        with self.cache.lock:
            try:
                return answers.text(fn())
            except StepscopeError as exc:
                raise ToolError(str(exc)) from None

    def overview(self, path: TracePath, rank: Rank = None, step_ms: StepMs = None) -> str:
        """Summary of a trace: per rank the device, step count, average step (ms), its breakdown
        (ms and %), GPU utilisation; the verdicts (what bounds each rank's step); the top findings'
        headlines; diagnostics of the reader; the names of the views `view` can show."""
        return self._answer(lambda: answers.overview(self.cache.get(path, step_ms).doc, rank))

    def findings(self, path: TracePath, top: Top = 10, rule: Annotated[str | None, Field(
            description="Only this rule (e.g. dataloader-bound)")] = None, rank: Rank = None,
            min_severity: Annotated[str | None, Field(description="low, medium or high")] = None,
            step_ms: StepMs = None) -> str:
        """The advisor's findings, ranked (largest estimated gain first): rule, severity, estimated
        gain per step (ms, %), how it was estimated, evidence, the change to make and advice."""
        return self._answer(lambda: answers.findings(self.cache.get(path, step_ms).doc, top, rule, rank,
                                                     min_severity))

    def view(self, path: TracePath, name: Annotated[str, Field(description="View name, e.g. kernels, operators, "
             "memory, idle, sync, memcpy, launch, fusion, critical_path, steps (overview lists them)")],
             rank: Rank = None, top: Top = 10, sort_by: Annotated[str | None, Field(
                 description="Numeric column to sort tables by, descending (e.g. total_ms)")] = None,
             name_regex: Annotated[str | None, Field(
                 description="Keep table rows whose name matches (case-insensitive regex)")] = None) -> str:
        """One section of the analysis document (the `stepscope analyze --json` values), its tables
        filtered, sorted and cut to `top` rows; `tables` says per table how many rows there are,
        match and are shown."""
        return self._answer(lambda: answers.view(self.cache.get(path).doc, name, rank, top, sort_by, name_regex))

    def timeline(self, path: TracePath, rank: Rank = None, step: Annotated[int | None, Field(
                 description="A step number: its window")] = None,
                 start_ns: Annotated[int | None, Field(description="Window start, trace ns")] = None,
                 end_ns: Annotated[int | None, Field(description="Window end, trace ns")] = None,
                 max_items: Annotated[int, Field(ge=1, le=queries.MAX_WINDOW_ITEMS)] = 200,
                 buckets: Annotated[int, Field(ge=1, le=500)] = 20) -> str:
        """What ran in a time window of one rank: tracks (threads, streams), its events (start, duration
        in ns, kind, name, depth, step) when at most `max_items`, else per-bucket busy fraction, count
        and dominant name per track; the steps, flows and counters in the window."""
        return self._answer(lambda: queries.timeline(self.cache.get(path), rank, step, start_ns, end_ns,
                                                     max_items, buckets))

    def sql(self, path: TracePath, query: Annotated[str, Field(description="DuckDB SQL")],
            limit: Annotated[int, Field(ge=1, le=queries.MAX_SQL_ROWS)] = 100) -> str:
        """SQL (DuckDB) over the trace's tables: events, tracks, steps, memory, counters, flows,
        strings (id → s), kinds; views ev (events with name_str, cat_str, kind_name) and kernels.
        Times are int64 ns (ts_ns, dur_ns). E.g. SELECT name_str, count(*) n, sum(dur_ns)/1e6 AS ms
        FROM kernels GROUP BY 1 ORDER BY ms DESC LIMIT 5. Files cannot be read or written."""
        return self._answer(lambda: queries.sql(self.cache.get(path), query, limit))

    def diff(self, base: Annotated[str, Field(description="The base trace (before)")],
             new: Annotated[str, Field(description="The new trace (after)")], top: Top = 10) -> str:
        """Where the time went between two runs (`stepscope diff --json`): the step's breakdown base
        vs new (ms per step), the largest changes by operator, kernel, module, memory and runtime
        call, a narrative, and findings resolved / new / still there."""
        return self._answer(lambda: queries.diff(self.cache.get(base), self.cache.get(new), top))


    def whatif(self, path: TracePath, rank: Rank = None,
               workers: Annotated[int | str | None, Field(description=(
                   "DataLoader with N workers; where the trace's loader already has workers, 'FROM:TO' (the "
                   "num_workers it ran with and after, e.g. '2:4')"))] = None,
               host_overhead: Annotated[float | None, Field(description="Launch calls and host work between "
                                                            "them take FACTOR x their time (0: CUDA graphs)")] = None,
               host_in: Annotated[list[str] | None, Field(description="REGEX=FACTOR: the same, only inside "
                                                          "host ops matching REGEX")] = None,
               drop_syncs: Annotated[str | None, Field(description="Blocking calls matching REGEX no longer "
                                                       "block ('.': all; 'item': .item())")] = None,
               pin_copies: Annotated[bool, Field(description="Pageable copies pinned")] = False,
               scale: Annotated[list[str] | None, Field(description="REGEX=FACTOR: kernels / copies "
                                                        "matching REGEX take FACTOR x their time")] = None,
               overlap_comm: Annotated[bool, Field(description="Communication fully hidden under "
                                                   "compute")] = False,
               fix_rank: Annotated[list[int] | None, Field(description="Stragglers fixed: each rank arrives "
                                                           "with the others at the collectives")] = None,
               batch: Annotated[str | None, Field(description="FROM:TO, a larger batch (e.g. 32:64): work on "
                                                  "tensors with a dimension of FROM grows TO/FROM x (an upper "
                                                  "bound; needs recorded shapes)")] = None,
               fused_optimizer: Annotated[bool, Field(description="A fused / foreach optimizer: the optimizer "
                                                      "step's host work and kernels take 1/3")] = False,
               no_compile: Annotated[bool, Field(description="No torch.compile compilation inside the steps "
                                                 "(no recompiles)")] = False,
               batch_copies: Annotated[bool, Field(description="The small host-device copies made as one "
                                                   "(their ops take no host time)")] = False,
               amp: Annotated[bool, Field(description="Mixed precision: the eligible ops' kernels without Tensor "
                                          "Cores run faster by the device's half-precision peak over its FP32 "
                                          "one")] = False,
               bf16: Annotated[bool, Field(description="bf16 autocast: the TF32 Tensor-Core kernels run faster by "
                                           "the device's bf16 peak over its TF32 one")] = False,
               remedies: Annotated[list[str] | None, Field(description="Standard remedies by name, as a "
                                                            "finding's gain basis gives them (stepscope whatif "
                                                            "--remedy): loader-workers, channels-last, amp, "
                                                            "fill-sms, fuse-elementwise, set-to-none, ...")] = None,
               unprofiled_us: Annotated[float | None, Field(ge=0, le=1000, description="Without the profiler's "
                                                            "own cost: each recorded op costs US µs less (8 "
                                                            "measured on CUDA traces); applied first")] = None) -> str:
        """Predict each step with the named changes applied together (`stepscope whatif --json`): the
        replayed step graph gives measured vs predicted ms per step, the mean and median, the saving,
        and what bounds the step before and after."""
        return self._answer(lambda: queries.whatif(self.cache.get(path), rank, workers, host_overhead, host_in,
                                                   drop_syncs, pin_copies, scale, overlap_comm, fix_rank, batch,
                                                   fused_optimizer, no_compile, batch_copies, unprofiled_us, amp, bf16,
                                                   tuple(remedies or ())))


def _version() -> str:
    try:
        return metadata.version("stepscope")
    except metadata.PackageNotFoundError:
        return "0"


def build_server(cache: TraceCache) -> MCPServer[Any]:
    """The MCP server with every tool registered (read-only, closed world)."""
    server: MCPServer[Any] = MCPServer(name="stepscope", instructions=INSTRUCTIONS, version=_version(),
                                       log_level="WARNING")
    tools = Tools(cache)
    hints = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    for name in TOOLS:
        server.add_tool(getattr(tools, name), name=name, annotations=hints, structured_output=False)
    return server


def serve_stdio(root: Path | None = None, capacity: int = DEFAULT_CAPACITY) -> None:
    """Answer MCP requests on stdin/stdout until the client closes stdin."""
    build_server(TraceCache(capacity, root=root)).run("stdio")
