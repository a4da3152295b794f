"""``stepscope whatif PATH --workers 4 ...``: predict the step after a fix, before making it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.platform import has_device
from stepscope.analysis.profiler_cost import measured_cost_us
from stepscope.analysis.whatif.options import (
    REMEDY_FLAGS,
    check_ranks,
    refuse_calibrated_cost_without_device,
    refuse_without_device,
    remedy_flags_of,
    transforms_of,
)
from stepscope.analysis.whatif.remedies import REMEDIES
from stepscope.analysis.whatif.simulate import simulate
from stepscope.analysis.whatif.transforms import Transform
from stepscope.analysis.whatif.unprofiled import EVENT_COST_NS
from stepscope.cli.common import InputPath, echo_json, load_trace, trace_options
from stepscope.errors import UsageError
from stepscope.report import whatif_view
from stepscope.report.console import terminal_console

F = TypeVar("F", bound=Callable[..., Any])


class _WhatifCommand(click.Command):
    """``--unprofiled`` takes an optional value: click reads ``--unprofiled -1`` as the option without a
    value followed by an unknown option ``-1`` ("No such option"); a negative cost is refused here, in
    the words the server and the MCP tool use."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for i, arg in enumerate(args):
            value = args[i + 1] if arg == "--unprofiled" and i + 1 < len(args) else \
                arg.partition("=")[2] if arg.startswith("--unprofiled=") else ""
            if _NEGATIVE.match(value):
                raise UsageError(f"--unprofiled takes a cost per recorded op from 0 to 1000 µs (got {value})")
        return super().parse_args(ctx, args)


def remedy_flag_options(command: F) -> F:
    """One ``--flag`` per :data:`REMEDY_FLAGS` remedy (``fill_sms`` → ``--fill-sms``), its help the remedy's
    own basis: the words the prediction shows are the words the option is described by."""
    for flag, change in reversed(REMEDY_FLAGS.items()):
        basis = change.basis()
        code = "_" in basis.split(" ", 1)[0]  # zero_grad(...): kept as written
        command = click.option(f"--{flag.replace('_', '-')}", is_flag=True,
                               help=f"{basis if code else basis[:1].upper() + basis[1:]}.")(command)
    return command


_NEGATIVE = re.compile(r"^-(?:\d|\.\d|inf)", re.IGNORECASE)
#: ``--unprofiled`` without a value: the trace's own cost where it measured one (a negative value typed out is
#: refused by :class:`_WhatifCommand` before this can be mistaken for it)
OWN_COST = -1.0


@click.command("whatif", cls=_WhatifCommand, short_help="Predict the step after a change, before making it.")
@click.argument("path", required=False, type=InputPath())
@click.option("--workers", default=None, metavar="N|FROM:TO",
              help="DataLoader with N background workers (each call waits max(0, fetch/N - rest of step)); "
                   "where the trace's loader already has workers, FROM:TO: the num_workers it ran with and after "
                   "(e.g. 2:4).")
@click.option("--host-overhead", type=click.FloatRange(min=0), default=None, metavar="FACTOR",
              help="Launch calls and host work between them take FACTOR x their time (0: CUDA/HIP graphs).")
@click.option("--host-in", multiple=True, metavar="REGEX=FACTOR",
              help="The same, only inside host ops matching REGEX (e.g. '^Optimizer.step=0.5': a fused optimizer).")
@click.option("--fused-optimizer", is_flag=True,
              help="A fused / foreach optimizer: the optimizer step's host work and kernels take 1/3 of their time.")
@click.option("--no-compile", is_flag=True,
              help="No torch.compile compilation inside the steps (compiled once, before them): no recompiles.")
@click.option("--batch-copies", is_flag=True,
              help="The small host-device copies made as one: the ops issuing them take no host time.")
@click.option("--drop-syncs", default=None, metavar="REGEX",
              help="Blocking calls whose name or op matches REGEX no longer block ('.': all; 'item': .item()).")
@click.option("--pin-copies", "pin", is_flag=True, help="Pageable copies pinned: half their time, non-blocking.")
@click.option("--amp", is_flag=True,
              help="Mixed precision: the eligible ops' kernels without Tensor Cores run faster by the device's "
                   "half-precision Tensor-Core peak over its FP32 one.")
@click.option("--bf16", is_flag=True,
              help="bf16 autocast: the TF32 Tensor-Core kernels run faster by the device's bf16 peak over its "
                   "TF32 one.")
@remedy_flag_options
@click.option("--remedy", "remedy_names", multiple=True, metavar="NAME",
              help="A standard remedy by the name a finding's gain basis gives (repeatable): "
                   f"{', '.join(REMEDIES)}.")
@click.option("--scale", "scales", multiple=True, metavar="REGEX=FACTOR",
              help="Kernels/copies whose name or launching op matches REGEX take FACTOR x their time (repeatable).")
@click.option("--overlap-comm", is_flag=True, help="Communication kernels fully hidden under compute (upper bound).")
@click.option("--fix-rank", "fix_ranks", multiple=True, type=int, metavar="RANK",
              help="A straggler fixed: RANK arrives with the second-to-last rank at every collective it was last at.")
@click.option("--batch", default=None, metavar="FROM:TO",
              help="A larger batch (e.g. 32:64): ops on tensors with a dimension of FROM (their recorded shapes), "
                   "their kernels and the DataLoader take TO/FROM x their time (an upper bound).")
@click.option("--unprofiled", "unprofiled_us", type=float, is_flag=False, flag_value=OWN_COST, default=None,
              metavar="[US]", help="Without the profiler's own cost: each op it recorded costs US µs less (default: "
                                   "the cost this trace's step log or --step-ms measures, else 8, measured on CUDA "
                                   "traces — refused on a CPU-only run: give --step-ms); the other changes then "
                                   "apply to that step.")
@click.option("--json", "as_json", is_flag=True, help="Print the prediction as JSON.")
@trace_options
def command(path: str | None, workers: str | None, host_overhead: float | None, host_in: tuple[str, ...],
            fused_optimizer: bool, no_compile: bool, batch_copies: bool, drop_syncs: str | None, pin: bool, amp: bool,
            bf16: bool, scales: tuple[str, ...], overlap_comm: bool, fix_ranks: tuple[int, ...], batch: str | None,
            unprofiled_us: float | None, as_json: bool, no_cache: bool, span: str | None,
            ranks: tuple[int, ...], remedy_names: tuple[str, ...], **remedy_flags: bool) -> None:
    """Predict each step with the named changes applied together (the embedded sample when PATH is omitted)."""
    def changes_with(cost_us: float | None) -> list[Transform]:
        return transforms_of(workers, drop_syncs, pin, scales, host_overhead, host_in, overlap_comm, fix_ranks, batch,
                             fused_optimizer, no_compile, batch_copies, cost_us, amp, bf16,
                             (*remedy_flags_of(**remedy_flags), *remedy_names))  # --fill-sms ..., --remedy X

    own = unprofiled_us == OWN_COST
    changes = changes_with(EVENT_COST_NS / 1e3 if own else unprofiled_us)  # bad options fail before the load
    trace = load_trace(path, no_cache, span, ranks)
    measured_us = measured_cost_us(trace) if own else None
    if measured_us is not None:
        changes = changes_with(measured_us)
    check_ranks(fix_ranks, trace.rank_ids)
    device = any(has_device(trace, r) for r in (ranks or trace.rank_ids))
    refuse_calibrated_cost_without_device(own, measured_us, device, EVENT_COST_NS / 1e3)
    refuse_without_device(changes, device)
    try:
        result = simulate(trace, changes)
    except NotApplicable as exc:
        raise UsageError(f"no what-if for this trace: {exc.reason}", trace.source) from None
    if as_json:
        echo_json(whatif_view.whatif_dict(result, trace.source))
        return
    whatif_view.render(result, trace.source, terminal_console())
