"""The self-contained HTML report (SPEC §9): one file, every style and script inline, no network.

``render_html(doc, title=...)`` draws the analysis report of a §12 document, optionally with a
step timeline snapshot (:func:`compute_timeline`) and memory curves (:func:`memory_from_trace`);
``render_diff_html(doc, title=...)`` draws the report of a §12 diff document. Charts are inline
SVG generated here; the page's only script is a few lines of vanilla JS (tooltips, sortable tables,
rank tabs).
"""

from __future__ import annotations

from stepscope.report.html.diff import render_diff_html
from stepscope.report.html.page import render_html
from stepscope.report.html.series import MemoryCurve, memory_from_doc, memory_from_trace
from stepscope.report.html.timeline_data import TimelineData, compute_timeline

__all__ = [
    "MemoryCurve",
    "TimelineData",
    "compute_timeline",
    "memory_from_doc",
    "memory_from_trace",
    "render_diff_html",
    "render_html",
]
