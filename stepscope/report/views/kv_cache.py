"""Terminal view of a cache grown by concatenation every call."""

from __future__ import annotations

from rich.console import Console

from stepscope.analysis.kv_cache import GrowingCache
from stepscope.report.views._deep import ms


def render_kv_cache(r: GrowingCache, console: Console, top: int) -> None:
    n = max(r.step_count, 1)
    device = f", {ms(r.device_ns / n)} ms of device work" if r.device_ns else ""
    console.print(f"[bold]rank {r.rank}: a cache grown by concatenation[/bold]: {r.families} tensor shape(s) grow "
                  f"by torch.cat every call, lengths {r.shortest}-{r.longest} (the largest {r.cache_shape}); "
                  f"{r.calls_per_step:,.0f} cat calls a step, {ms(r.host_ns / n)} ms recorded on the host{device}. "
                  "A graph capture needs it preallocated (fixed shapes); what the copies cost is not the recorded "
                  "time (the profiler's own cost per op is in it)")
