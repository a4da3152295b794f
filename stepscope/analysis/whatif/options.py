"""The what-if changes a user names (``stepscope whatif`` options, the web UI's form) as transformations.

One function for both front ends, so the command line and the server accept the same changes and
refuse the same nonsense with the same one-line message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.algo_search import NoAlgoSearch
from stepscope.analysis.whatif.batch import LargerBatch
from stepscope.analysis.whatif.host_work import MoveHostWork
from stepscope.analysis.whatif.kernel_remedies import (
    FillSms,
    FusedAttention,
    FuseElementwise,
    PadGemms,
)
from stepscope.analysis.whatif.launch_blocking import NoLaunchBlocking
from stepscope.analysis.whatif.loop_code import MoveLoopCode
from stepscope.analysis.whatif.optimizer import FusedOptimizer
from stepscope.analysis.whatif.precision import Bf16OverTf32, MixedPrecision
from stepscope.analysis.whatif.remedies import REMEDIES
from stepscope.analysis.whatif.unprofiled import WithoutProfiler
from stepscope.analysis.whatif.zero_grad import SetToNone
from stepscope.errors import UsageError

#: the largest factor a change may apply (a duration times more overflows int64 nanoseconds)
MAX_FACTOR = 1000.0


def factor_of(value: float, option: str) -> float:
    """A factor in [0, MAX_FACTOR] (NaN, infinity or 1e300 would replay into garbage); a usage error otherwise."""
    if not math.isfinite(value) or not 0 <= value <= MAX_FACTOR:
        raise UsageError(f"{option} takes a factor from 0 to {MAX_FACTOR:g} (got {value!r})")
    return value


def regex_of(pattern: str, option: str) -> str:
    """``pattern`` when it compiles as a Python regular expression; a one-line usage error otherwise."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise UsageError(f"{option}: not a regular expression ({exc}): {pattern!r}") from None
    return pattern


def pair(text: str, option: str) -> tuple[str, float]:
    """``REGEX=FACTOR`` → (regex, factor); a one-line usage error otherwise."""
    pattern, sep, value = text.rpartition("=")
    try:
        factor = float(value)
    except ValueError:
        factor = -1.0
    if not sep or not pattern or not math.isfinite(factor) or not 0 <= factor <= MAX_FACTOR:
        raise UsageError(f"{option} takes REGEX=FACTOR with a factor from 0 to {MAX_FACTOR:g} (got {text!r})")
    return regex_of(pattern, option), factor


#: the remedies named by a flag (``--fill-sms``, the server's ``fill_sms``: true): the advisor's models
REMEDY_FLAGS: dict[str, tf.Transform] = {"fill_sms": FillSms(), "pad_gemms": PadGemms(),
                                         "fuse_elementwise": FuseElementwise(), "fused_attention": FusedAttention(),
                                         "set_to_none": SetToNone(), "no_launch_blocking": NoLaunchBlocking(),
                                         "move_host_work": MoveHostWork(), "no_algo_search": NoAlgoSearch(),
                                         "move_loop_code": MoveLoopCode()}


def remedy_flags_of(**given: bool) -> tuple[str, ...]:
    """The :data:`REMEDY_FLAGS` set among the given flags (``fill_sms=True`` → ``("fill_sms",)``)."""
    return tuple(name for name, on in given.items() if on)


#: the largest batch size ``--batch`` takes (a dimension of a tensor is an int64; this is plenty)
MAX_BATCH = 1 << 40


def batch_of(text: str, option: str) -> LargerBatch:
    """``FROM:TO`` (the batch size now and after, e.g. ``32:64``) → the change; a usage error otherwise."""
    now, sep, after = text.partition(":")
    try:
        a, b = int(now), int(after)
    except ValueError:
        a = b = 0
    if not sep or not 1 <= a <= MAX_BATCH or not 1 <= b <= MAX_BATCH or b / a > MAX_FACTOR:
        raise UsageError(f"{option} takes FROM:TO, the batch size now and after (e.g. 32:64), each from 1 to "
                         f"{MAX_BATCH}, TO at most {MAX_FACTOR:g} x FROM (got {text!r})")
    return LargerBatch(a, b / a)


#: the most DataLoader workers ``--workers`` takes (the server's limit too)
MAX_WORKERS = 1024


def workers_of(value: int | str, option: str) -> tf.LoaderWorkers:
    """``N`` (a loader without workers given N) or ``FROM:TO`` (the workers the trace ran with and after,
    e.g. ``2:4``; FROM 0 for a loader without workers) → the change; a usage error otherwise."""
    now, sep, after = str(value).partition(":")
    try:
        a, b = (int(now), int(after)) if sep else (0, int(now))
    except ValueError:
        a, b = -1, 0
    if not 0 <= a <= MAX_WORKERS or not 1 <= b <= MAX_WORKERS:
        raise UsageError(f"{option} takes N or FROM:TO, the DataLoader's workers after (N, TO: 1 to {MAX_WORKERS}) "
                         f"and those the trace ran with (FROM: 0 to {MAX_WORKERS}; e.g. 2:4) (got {value!r})")
    return tf.LoaderWorkers(b, a if sep else None)


def transforms_of(workers: int | str | None, drop_syncs: str | None, pin: bool, scales: tuple[str, ...],
                  host_overhead: float | None, host_in: tuple[str, ...], overlap_comm: bool,
                  fix_ranks: tuple[int, ...] = (), batch: str | None = None,
                  fused_optimizer: bool = False, no_compile: bool = False,
                  batch_copies: bool = False, unprofiled_us: float | None = None, amp: bool = False,
                  bf16: bool = False, remedy_flags: tuple[str, ...] = ()) -> list[tf.Transform]:
    """The transformations the options name, in a fixed order (profiler, ranks, batch, input, host,
    syncs, copies, device; ``remedy_flags``: keys of :data:`REMEDY_FLAGS` and names of the standard
    remedies, ``--remedy NAME``, each once): the profiler's cost first, so
    the changes after it apply to the step the program runs unprofiled; a larger batch before the
    remedies, so they apply to its step."""
    out: list[tf.Transform] = []
    if unprofiled_us is not None:
        if not math.isfinite(unprofiled_us) or not 0 <= unprofiled_us <= 1000:
            raise UsageError(f"--unprofiled takes a cost per recorded op from 0 to 1000 µs (got {unprofiled_us!r})")
        out.append(WithoutProfiler(round(unprofiled_us * 1000)))
    out += [tf.FixSlowRank(r) for r in dict.fromkeys(fix_ranks)]
    if batch is not None:
        out.append(batch_of(batch, "--batch"))
    if workers is not None:
        out.append(workers_of(workers, "--workers"))
    if host_overhead is not None:
        out.append(tf.HostOverhead(factor_of(host_overhead, "--host-overhead")))
    out += [tf.HostOverhead(f, tf.Select(p)) for p, f in (pair(s, "--host-in") for s in host_in)]
    if fused_optimizer:
        out.append(FusedOptimizer())
    if no_compile:
        out.append(tf.NoCompile())
    if batch_copies:
        out.append(tf.BatchSmallCopies())
    if drop_syncs is not None:
        out.append(tf.DropSyncs(tf.Select(regex_of(drop_syncs, "--drop-syncs"))))
    if pin:
        out.append(tf.PinnedCopies())
    if amp:
        out.append(MixedPrecision())
    if bf16:
        out.append(Bf16OverTf32())
    out += _named(remedy_flags, out)
    out += [tf.ScaleDevice(tf.Select(p), f) for p, f in (pair(s, "--scale") for s in scales)]
    if overlap_comm:
        out.append(tf.OverlapComm())
    if not out:
        raise UsageError("name at least one change: --workers, --host-overhead, --host-in, --fused-optimizer, "
                         "--no-compile, --batch-copies, --drop-syncs, --pin-copies, --amp, --bf16, --fill-sms, "
                         "--pad-gemms, --fuse-elementwise, --fused-attention, --set-to-none, "
                         "--no-launch-blocking, --move-host-work, --no-algo-search, --remedy NAME, --scale, "
                         "--overlap-comm, --fix-rank, --batch or --unprofiled (see stepscope whatif --help)")
    return out


def _named(names: tuple[str, ...], given: list[tf.Transform]) -> list[tf.Transform]:
    """The :data:`REMEDY_FLAGS` remedies named (in that table's order), then the standard remedies named
    (``--remedy channels-last``, in the order given), each once and none already ``given`` (``--amp
    --remedy amp``); a usage error for another name, or for a remedy that sets what an option already
    sets otherwise (``--workers 2 --remedy loader-workers``: both would apply, one after the other)."""
    unknown = sorted(set(names) - REMEDY_FLAGS.keys() - REMEDIES.keys())
    if unknown:
        raise UsageError(f"no such remedy {unknown[0]!r} (the standard remedies: {', '.join(REMEDIES)})")
    out: list[tf.Transform] = []
    for t in [t for flag, t in REMEDY_FLAGS.items() if flag in names] + [REMEDIES[n] for n in names if n in REMEDIES]:
        clash = next((g for g in given if type(g) is type(t) and g != t and _target(g) == _target(t)), None)
        if clash is not None:
            raise UsageError(f"two changes set the same thing, name one: {clash.basis()}; {t.basis()}")
        if t not in out and t not in given:
            out.append(t)
    return out


def _target(t: tf.Transform) -> object:
    """What a change acts on, where its class takes a selection (a pattern's kernels, ops' host time)."""
    return getattr(t, "select", None)


def refuse_without_device(transforms: Sequence[tf.Transform], device: bool) -> None:
    """A one-line usage error for a change that acts on a device's work alone (:func:`~.transforms.device_part`:
    Tensor-Core math, kernel grids, copies to the device, launches, device syncs) asked of a trace without a
    device (``device`` False: a CPU-only run): replayed, it would change nothing, and its basis speaks of
    hardware the program never ran on. The replay itself (:func:`~.simulate.simulate`) still takes it."""
    if device:
        return
    for t in transforms:
        part = tf.device_part(t)
        if part is not None:
            raise UsageError(f"no what-if for this trace: {t.name} models {part}, and this trace ran on the CPU "
                             "alone (no device): there is nothing for it to act on")


#: why ``--unprofiled`` without a value is refused on a CPU-only run that measured no cost of its own
CPU_COST_UNKNOWN = ("--unprofiled without a value takes the profiler's cost per recorded op the run measured, and "
                    "this CPU-only run measured none (the calibrated {cost_us:g} µs is a CUDA host's, more than a "
                    "CPU op's whole time): give the step the program took without the profiler (--step-ms MS) or "
                    "a cost (--unprofiled US)")


def refuse_calibrated_cost_without_device(own_cost: bool, measured_us: float | None, device: bool,
                                          calibrated_us: float) -> None:
    """A one-line usage error for the calibrated cost per op asked of a CPU-only run: measured on CUDA hosts
    (a launch path per op), it exceeds most CPU ops' time and would replay steps to nothing (0.00 ms)."""
    if own_cost and measured_us is None and not device:
        raise UsageError(CPU_COST_UNKNOWN.format(cost_us=calibrated_us))


def check_ranks(fix_ranks: tuple[int, ...], rank_ids: list[int]) -> None:
    """A usage error when a rank to fix is not in the trace."""
    missing = [r for r in fix_ranks if r not in rank_ids]
    if missing:
        raise UsageError(f"--fix-rank: no rank {missing[0]} in the trace (its ranks: {', '.join(map(str, rank_ids))})")
