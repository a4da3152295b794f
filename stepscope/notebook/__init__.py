"""Notebook entry points: ``stepscope.analyze(path)`` and ``stepscope.diff(base, new)``.

Both return results that render as HTML in Jupyter (``_repr_html_``) from the JSON document their
command prints, and convert a table to pandas / polars / Arrow (``results.py``). The loaded
:class:`~stepscope.model.trace.Trace` displays and converts itself too (``model/display.py``,
``model/frames.py``).

    import stepscope
    a = stepscope.analyze("runs/base")       # Analysis: shows the step, verdicts, findings, top tables
    a.findings                               # Findings: ranked, with advice
    a.to_pandas("kernels")                   # one view's rows as a DataFrame
    stepscope.diff("runs/base", "runs/fixed")  # Diff: where the time went
"""

from __future__ import annotations

from pathlib import Path

from stepscope.advisor.engine import advise
from stepscope.analysis.bundle import analyze as analyze_bundle
from stepscope.compare.diff import compare
from stepscope.compare.document import to_json as diff_json
from stepscope.ingest import load
from stepscope.model.trace import Trace
from stepscope.notebook.results import Analysis, Diff, Findings
from stepscope.report.advice_json import finding_dict
from stepscope.report.json_out import to_json

__all__ = ["Analysis", "Diff", "Findings", "analyze", "diff"]

Source = str | Path | Trace | Analysis | None


def analyze(source: Source = None, *, batch_size: int | None = None) -> Analysis:
    """Load (a path; None: the embedded sample), analyse and advise a trace, as ``stepscope analyze``."""
    if isinstance(source, Analysis):
        return source
    trace = source if isinstance(source, Trace) else load(source)
    bundle = analyze_bundle(trace, batch_size=batch_size)
    with bundle.memo.active():
        doc = to_json(bundle, [finding_dict(f) for f in advise(bundle)])
    return Analysis(bundle, doc)


def diff(base: Source, new: Source) -> Diff:
    """Compare two runs (paths, traces or analyses), as ``stepscope diff BASE NEW``."""
    return Diff(diff_json(compare(analyze(base).bundle, analyze(new).bundle)))
