"""Terminal views of graph replays, compiled kernels and inference phases (80 columns)."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.compiled import CompiledResult
from stepscope.analysis.graphs import GraphResult
from stepscope.analysis.phases import PHASES, PhaseResult
from stepscope.report.verdict_texts import NO_DEVICE_COMPILED, dynamo_frames_text
from stepscope.report.views._deep import ms, pct, short, table, us


def render_graphs(r: GraphResult, console: Console, top: int) -> None:
    g = r.launches
    console.print(f"[bold]rank {r.rank}: graph replays[/bold]: {len(g.row):,} launches ran "
                  f"{r.graph_activities:,} of {r.gpu_activities:,} GPU activities, {ms(r.graph_gpu_ns)} ms "
                  f"({pct(r.graph_gpu_pct)} of GPU time); unattributed activities: {r.unattributed:,}"
                  + (f" (+{r.before_trace:,} launched before the trace began)" if r.before_trace else ""))
    t = table(f"rank {r.rank}: largest graph launches", "launched from", "kernels", "GPU ms", "call µs",
              "delay ms")
    for i in sorted(range(len(g.row)), key=lambda i: -int(g.gpu_ns[i]))[:top]:  # per launch shown
        t.add_row(short(g.launcher(i) or g.name(i), 34), f"{int(g.nodes[i]):,}", ms(g.gpu_ns[i]), us(g.cpu_ns[i]),
                  ms(g.first_delay_ns[i]))
    console.print(t)
    if not r.has_capture:
        console.print("  no capture trace: graph kernels are attributed to their launch and the code around "
                      "it, not to the ops that recorded them")
        return
    c = table(f"rank {r.rank}: graph kernels by the op that captured them ({pct(r.captured_pct)} named)",
              "op at capture", "calls", "kernels", "GPU ms")
    for name, calls, count, total in r.captured_top(top):  # per op name
        c.add_row(short(name, 44), f"{calls:,}", f"{count:,}", ms(total))
    console.print(c)


def render_compiled(r: CompiledResult, console: Console, top: int) -> None:
    f = r.frames
    if f.has_lookups:
        console.print(f"[bold]rank {r.rank}:[/bold] " + dynamo_frames_text(
            f.lookups_per_step, f.regions_per_step, f.eager_frames_per_step, int(f.falling_back.sum()),
            int(f.steady.sum())))
    if r.device_ns == 0:  # a CPU-only rank
        console.print(f"[bold]rank {r.rank}: torch.compile[/bold]: {NO_DEVICE_COMPILED}")
        return
    console.print(f"[bold]rank {r.rank}: compiled kernels[/bold]: {len(r.triton):,} Triton kernels, "
                  f"{ms(r.triton.total_ns)} ms ({pct(r.triton_pct)} of device time); "
                  f"{pct(r.in_graphs_pct)} of device time inside compiled graphs")
    g = r.graphs
    if len(g.name):
        t = table(f"rank {r.rank}: per compiled graph", "graph", "calls", "kernels", "triton", "ms", "of step")
        for i in range(min(top, len(g.name))):  # per graph shown
            t.add_row(short(g.name[i], 30), f"{int(g.calls[i]):,}", f"{int(g.kernels[i]):,}",
                      f"{int(g.triton_kernels[i]):,}", ms(g.device_ns[i]), pct(g.step_share_pct[i]))
        console.print(t)
    index = {n: i for i, n in enumerate(r.triton.names)}
    k = table(f"rank {r.rank}: Triton kernels, fused ops decoded", "kernel → kind: ops", "count", "ms")
    for name, count, total in r.triton.top(top):  # per kernel name shown
        i = index[name]
        ops = f"{r.triton_kinds[i]}: {', '.join(r.triton_ops[i]) or '-'}"
        k.add_row(f"{short(name, 46)}\n  {short(ops, 55)}",
                  f"{count:,}", ms(total))
    console.print(k)


def render_phases(r: PhaseResult, console: Console, top: int) -> None:
    s = r.steps
    t = table(f"rank {r.rank}: inference phases ({r.source})", "phase", "steps", "tokens", "dev span ms",
              "ms/token")
    for p in PHASES:  # prefill, decode, mixed
        rows = r.phase_rows(p)
        if len(rows) == 0:
            continue
        tok, per = r.tokens(p), r.per_token_ns(p)
        t.add_row(p, f"{len(rows):,}", f"{tok:,}" if tok >= 0 else "?", ms(float(s.device_span_ns[rows].sum())),
                  f"{per / 1e6:.4f}" if per is not None else "-")
    console.print(t)
    if "mixed" in s.phase:
        console.print("  mixed: prefill and decode requests ran in one forward; its time is not split")
