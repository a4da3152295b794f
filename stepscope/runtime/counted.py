"""A process-wide setting held by blocks: set by the first block that opens, set back by the last
that closes, nested blocks and blocks on other threads included (the heap mode, the huge-page hint)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class CountedSetting:
    """Counts the open blocks; ``set_it()`` runs when the count leaves 0 and returns what sets the
    setting back, which runs when the count returns to 0."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.inside = 0  # blocks open now, over all threads
        self._restore: Callable[[], object] | None = None

    @contextlib.contextmanager
    def held(self, set_it: Callable[[], Callable[[], object]]) -> Iterator[None]:
        with self._lock:
            if self.inside == 0:
                self._restore = set_it()
            self.inside += 1
        try:
            yield
        finally:
            with self._lock:
                self.inside -= 1
                if self.inside == 0 and self._restore is not None:
                    restore, self._restore = self._restore, None
                    restore()
