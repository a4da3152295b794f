"""The DataLoader's events on one rank (TB plugin's DataLoader category, seen from the host side).

Inside the rank's steps (the whole trace without steps), the host events named like the DataLoader
(``enumerate(DataLoader)#..._SingleProcessDataLoaderIter.__next__``, ``enumerate(DataPipe)#...``,
the breakdown's own test): their names, counts and time per step. The names tell how batches are
loaded: ``single-process`` when one of the five longest names is a ``_SingleProcessDataLoaderIter``
(``num_workers=0``), ``multi-process`` otherwise. How much of that time the GPU sat idle is the
step breakdown's ``dataloader`` category and the idle analysis' host wait in the DataLoader.
"""

from __future__ import annotations

from dataclasses import dataclass

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.breakdown import is_dataloader
from stepscope.analysis.common import in_step_rows, kept_steps
from stepscope.analysis.named import NamedRows, named_rows
from stepscope.analysis.platform import has_device
from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

KINDS = (int(EventKind.USER_ANNOTATION), int(EventKind.CPU_OP), int(EventKind.PYTHON_FUNCTION))


@dataclass(frozen=True)
class DataLoaderResult:
    """The DataLoader events of one rank inside its steps."""

    rank: int
    step_count: int  # steps the per-step numbers average over (0 without steps)
    calls: NamedRows  # the DataLoader events (its __next__ calls)
    has_device: bool = True  # False: a CPU-only run (the model's ops, not a GPU, run beside the loading)

    @property
    def loading(self) -> str:
        """``single-process`` when one of the five longest names is the single-process iterator."""
        return "single-process" if any("SingleProcess" in n for n, _, _ in self.calls.top(5)) else "multi-process"


def compute_dataloader(trace: Trace, rank: int) -> DataLoaderResult:
    """The rank's DataLoader events inside its steps."""
    rows = in_step_rows(trace, rank, KINDS)
    rows = rows[trace.strings.mask(is_dataloader)[trace.events["name"][rows]]]
    if len(rows) == 0:
        raise NotApplicable("no DataLoader events")
    return DataLoaderResult(rank, len(kept_steps(trace, rank)), named_rows(trace, rows), has_device(trace, rank))


def multi_process_loading(trace: Trace, rank: int) -> bool:
    """Whether the rank's DataLoader loads in worker processes (False: in the main process, or no
    DataLoader call inside its steps)."""
    try:
        dl = compute_dataloader(trace, rank)
    except NotApplicable:
        return False
    return len(dl.calls) > 0 and dl.loading == "multi-process"
