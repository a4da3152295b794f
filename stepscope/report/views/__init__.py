"""Terminal renderers, one per analysis result: ``RENDERERS[name](result, console, top)``.

Order here is the order of the terminal report (overview first). Add an entry per view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console

from stepscope.report.views.summary import render_summary

Renderer = Callable[[Any, Console, int], None]

RENDERERS: dict[str, Renderer] = {
    "summary": render_summary,
}

#: cluster-level renderers: ``CLUSTER_RENDERERS[name](result, console, top)``
CLUSTER_RENDERERS: dict[str, Renderer] = {}
