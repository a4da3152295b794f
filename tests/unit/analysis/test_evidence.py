"""The evidence analyses on the advisor's micro scenes (tests/unit/advisor/scenes.py): each gives the
numbers its rule's finding cites, and says why it does not apply where it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.analysis.base import NotApplicable
from stepscope.analysis.dataloader import compute_dataloader
from stepscope.model.trace import Trace
from tests.builders import TraceBuilder
from tests.unit.advisor.scenes import SCENES


def scene(tmp_path: Path, rule: str, on: bool = True) -> Trace:
    b = TraceBuilder()
    SCENES[rule](b, on)
    return b.load(tmp_path, f"{rule}-{on}.json")


def test_dataloader_events(tmp_path: Path) -> None:
    r = compute_dataloader(scene(tmp_path, "dataloader-bound"), 0)  # 3 steps, a 4 ms DataLoader call each
    assert r.step_count == 3 and r.loading == "single-process"
    assert r.events.top() == [("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 3, 12_000_000.0)]
    with pytest.raises(NotApplicable, match="no DataLoader events"):
        compute_dataloader(scene(tmp_path, "launch-bound"), 0)
