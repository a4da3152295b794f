"""What each standard remedy would save on a rank, by replaying its steps with the remedy applied.

These are the advisor's gains: a finding's estimated gain is the replayed saving of its remedy (on
the step's critical path, so time hidden under other work is never counted), with the remedy's
basis shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis._memo import per_rank
from stepscope.analysis.base import NotApplicable
from stepscope.analysis.whatif import transforms as tf
from stepscope.analysis.whatif.graph import step_graph
from stepscope.analysis.whatif.replay import Durations, replay
from stepscope.model.trace import Trace

#: Default DataLoader workers of the ``loader-workers`` remedy (the advisor's suggested count).
DEFAULT_WORKERS = 4
#: name → the transformation a remedy stands for
REMEDIES: dict[str, tf.Transform] = {
    "loader-workers": tf.LoaderWorkers(DEFAULT_WORKERS),
    "drop-syncs": tf.DropSyncs(),
    "pinned-copies": tf.PinnedCopies(),
    "graph-capture": tf.HostOverhead(0.0),
}
#: name → the ``stepscope whatif`` options (and web UI fields) that replay the same change
#: (:func:`stepscope.analysis.whatif.options.transforms_of`; ``drop_syncs`` "." matches every call)
REMEDY_OPTIONS: dict[str, dict[str, int | float | str | bool]] = {
    "loader-workers": {"workers": DEFAULT_WORKERS},
    "drop-syncs": {"drop_syncs": "."},
    "pinned-copies": {"pin_copies": True},
    "graph-capture": {"host_overhead": 0.0},
}


@dataclass(frozen=True)
class Remedies:
    """Per remedy (in :data:`REMEDIES` order): the predicted mean step of the rank and its basis."""

    rank: int
    name: tuple[str, ...]
    basis: tuple[str, ...]
    measured_mean_ns: float
    predicted_mean_ns: npt.NDArray[np.float64]

    def saved_ns(self, name: str) -> float:
        """What the remedy saves on the rank's mean step (never negative)."""
        i = self.name.index(name)
        return max(self.measured_mean_ns - float(self.predicted_mean_ns[i]), 0.0)

    def basis_of(self, name: str) -> str:
        return self.basis[self.name.index(name)]


@per_rank
def compute_remedies(trace: Trace, rank: int) -> Remedies:
    """Replay the rank's steps once per remedy (see the module docstring)."""
    g = step_graph(trace, rank)
    measured = g.steps.measured_end_ns - g.steps.measured_start_ns
    if len(measured) == 0:
        raise NotApplicable("no steps and no device work to replay")
    base = Durations.measured(g)
    predicted = [float(replay(g, t.change(trace, g, base)).step_ns.mean()) for t in REMEDIES.values()]
    return Remedies(rank, tuple(REMEDIES), tuple(t.basis() for t in REMEDIES.values()),
                    float(measured.mean()), np.asarray(predicted, np.float64))
