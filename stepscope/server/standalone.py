"""The standalone HTML report: the web UI's own app (``static/``) in one self-contained file, with the
data the server would answer embedded (the way pyinstrument ships its HTML renderer).

The page is ``static/index.html`` with its stylesheets inlined, its ES modules bundled into one
inline module script (:func:`bundle_js`: each module becomes a function scope, its imports a lookup
of the modules before it) and one JSON object embedded as
``<script type="application/json" id="stepscope-doc">`` (``<``, ``>`` and ``&`` escaped, so no text
of the trace can close the script). ``static/data.js`` reads that object instead of the API:

===========  ===================================================================================
``doc``      the §12 document (``analyze --json``), whole
``memory``   per rank, the memory curves (what ``GET .../memory`` answers, :mod:`.results`)
``info``     per rank, time extent and step windows (``GET .../info``)
``timeline`` per rank (at most :data:`SNAPSHOT_RANKS`, culprits and slow ranks first): the rank,
             one step's events exactly (:data:`STEP_ITEMS` at most) and those events' details
             (arguments, shapes, call stack, launch, op, kernels) — what the timeline shows
             without a server
``diff``     the diff document (``diff --html``)
``snapshot`` (``report --snapshot FILE``) an allocator snapshot: its summary, per device the curve
             windows around its peak and the largest allocations live at it (:func:`snapshot_section`);
             with no trace, the report is of kind ``"snapshot"``
``runs``     (a diff, when the traces were at hand) per side, ``"base"`` / ``"new"``: ``info`` and
             ``timeline`` of the compared rank as above, then of the other ranks both runs have
             (:data:`ALIGNED_RANKS` per side at most), each snapshot step the same ordinal on every
             rank and side (BASE's median step): the aligned timelines of the diff page
===========  ===================================================================================

A Content-Security-Policy in the page forbids every network request (``connect-src 'none'``): the
file works offline and cannot fetch anything, whatever a name in the trace says.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from stepscope.analysis.bundle import Bundle
from stepscope.analysis.timeline import timeline_window
from stepscope.analysis.timeline_details import details_table
from stepscope.model.trace import Trace
from stepscope.model.uniq import unique_texts
from stepscope.report.fmt import clip, culprits_of
from stepscope.report.json_out import clean
from stepscope.server.discover import RunEntry
from stepscope.server.results import memory_of, rank_info
from stepscope.server.snapshots import allocations_page, analyse_snapshot, peak_windows

FORMAT = "stepscope-standalone"
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "connect-src 'none'; font-src 'none'; object-src 'none'; form-action 'none'; base-uri 'none'")
#: ranks whose timeline the file carries (slow ranks first, then the lowest)
SNAPSHOT_RANKS = 8
#: events at most in the whole-rank window and in the step window (else both are aggregated)
OVERVIEW_ITEMS = 4000
STEP_ITEMS = 10000
#: ranks per side whose aligned timelines a diff report carries (the compared rank first)
ALIGNED_RANKS = 4
#: an allocator snapshot's curve windows: points each (as snapshot.js asks); allocations carried per device
SNAPSHOT_POINTS = 800
SNAPSHOT_ALLOCATIONS = 100

_IMPORT = re.compile(r'^import \{([^}]*)\} from "\./([a-z_]+\.js)";[ \t]*$', re.M)
_AS = re.compile(r"\s+as\s+")
_EXPORT = re.compile(r"^export (?:async )?(?:function\*? ?|const |let |class )([A-Za-z_$][\w$]*)", re.M)


def _static(name: str) -> str:
    return resources.files("stepscope.server").joinpath("static").joinpath(name).read_text(encoding="utf-8")


def _module(name: str, src: str) -> str:
    """One ES module as a function scope: imports read the earlier modules, exports are returned."""
    body = _IMPORT.sub(lambda m: f'const {{{_AS.sub(": ", m.group(1))}}} = __modules["{m.group(2)}"];', src)
    exports = _EXPORT.findall(src)
    body = re.sub(r"^export ", "", body, flags=re.M)
    return f'__modules["{name}"] = (() => {{\n{body}\nreturn {{{", ".join(exports)}}};\n}})();\n'


@cache
def bundle_js(entry: str = "app.js") -> str:
    """The app's modules in dependency order (each after what it imports) as one script."""
    order: list[str] = []
    sources: dict[str, str] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise ValueError(f"import cycle through {name}")
        sources[name] = _static(name)
        for _names, dep in _IMPORT.findall(sources[name]):
            visit(dep, (*path, name))
        order.append(name)

    visit(entry, ())
    text = "const __modules = {};\n" + "".join(_module(n, sources[n]) for n in order)
    if "</script" in text.lower():
        raise ValueError("a static module contains '</script'")
    return text


def _plain(obj: Any) -> Any:
    """``obj`` in plain JSON types (:func:`~stepscope.report.json_out.clean`: numpy → Python, NaN/inf →
    null) with every text longer than :data:`~stepscope.report.fmt.TEXT_LIMIT` cut (a 200 MB kernel name made
    a 1.2 GB page), in one walk; a list of finite numbers is taken whole (the timeline's columns)."""
    kind = type(obj)
    if kind is str:
        return clip(obj)
    if kind is list or kind is tuple:
        numbers = all(type(v) is int or type(v) is float for v in obj)
        if numbers and np.isfinite(np.asarray(obj, dtype=np.float64)).all():
            return list(obj)
        return [_plain(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return _clipped_scalar(clean(obj))


def _clipped_scalar(obj: Any) -> Any:
    return clip(obj) if isinstance(obj, str) else obj


def embed_json(obj: Any) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` become ``\\uXXXX`` (JSON.parse reads them back);
    a text longer than :data:`~stepscope.report.fmt.TEXT_LIMIT` characters is cut (``--json`` keeps it whole)."""
    text = json.dumps(_plain(obj), separators=(",", ":"), allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_page(payload: Mapping[str, Any]) -> str:
    """``static/index.html`` made self-contained, with ``payload`` embedded."""
    icon = "data:image/svg+xml;base64," + base64.b64encode(_static("icon.svg").encode()).decode()
    css = _static("report.css") + _static("app.css")
    page = _static("index.html")
    page = page.replace('<link rel="stylesheet" href="/static/report.css">\n', "")
    page = page.replace('<link rel="stylesheet" href="/static/app.css">', f"<style>{css}</style>")
    page = page.replace('<script type="module" src="/static/app.js"></script>', "")
    page = page.replace('<meta charset="utf-8">', f'<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" '
                        f'content="{CSP}">\n<meta name="generator" content="stepscope">')
    page = page.replace("/static/icon.svg", icon)
    page = page.replace("<title>stepscope</title>", f"<title>{_esc(str(payload.get('title') or 'stepscope'))}</title>")
    tail = (f'<script type="application/json" id="stepscope-doc">{embed_json(payload)}</script>\n'
            f'<script type="module">\n{bundle_js()}</script>\n</body>')
    return page.replace("</body>", tail)


def default_title(source: str) -> str:
    name = Path(source.rstrip("/")).name if source else ""
    return f"stepscope · {name}" if name else "stepscope report"


def _snapshot_ranks(doc: Mapping[str, Any], ranks: Sequence[int]) -> list[int]:
    """The culprits (late at the collectives), then the slow ranks, then the others, in rank order."""
    cluster = doc.get("cluster") if isinstance(doc.get("cluster"), Mapping) else None
    slow = (cluster or {}).get("slow_ranks")
    first: list[int] = []
    for r in [*sorted(culprits_of(cluster)), *(slow if isinstance(slow, list) else [])]:
        if r in ranks and r not in first:
            first.append(r)
    return (first + [r for r in ranks if r not in first])[:SNAPSHOT_RANKS]


def _median_step(info: Mapping[str, Any], step: int | None) -> Mapping[str, Any] | None:
    steps: list[Mapping[str, Any]] = list(info.get("steps") or [])
    if not steps:
        return None
    if step is not None:
        return next((s for s in steps if s["step"] == step), None)
    lengths = np.array([s["end_ns"] - s["start_ns"] for s in steps])
    return steps[int(np.argsort(lengths, kind="stable")[len(lengths) // 2])]


def _interned(column: Any) -> Any:
    """A list of texts (or nulls) as ``{"strings": [distinct texts], "index": [position of each, -1 for
    null]}`` (static/data.js expands it back): a window's event names repeat, and were half the file."""
    if not isinstance(column, list) or not column:
        return column
    none = np.fromiter((v is None for v in column), bool, len(column))
    strings, index = unique_texts(["" if v is None else v for v in column])  # by hashing (see unique_texts)
    return {"strings": strings.tolist(), "index": np.where(none, -1, index).tolist()}


def compact_window(window: dict[str, Any]) -> dict[str, Any]:
    """A timeline window (``TimelineWindow.to_dict``) with its text columns interned."""
    out = dict(window)
    if isinstance(window.get("events"), Mapping):
        out["events"] = {k: _interned(v) if k in ("name", "kind") else v for k, v in window["events"].items()}
    if isinstance(window.get("aggregate"), list):
        out["aggregate"] = [{k: _interned(v) if k in ("name", "kind") else v for k, v in g.items()}
                            for g in window["aggregate"]]
    return out


def timeline_snapshot(trace: Trace, info: Mapping[str, Any], step: int | None = None) -> dict[str, Any]:
    """The whole rank (its events when at most :data:`OVERVIEW_ITEMS`, else aggregated); then, unless the
    whole rank is already listed, one step (``step``, else the median one) and, when that step has too
    many events to list, a head of it with about :data:`STEP_ITEMS` / 2 events, exactly; and the details
    of every event listed (:func:`~stepscope.analysis.timeline_details.details_table`: what a click shows)."""
    rank = int(info["rank"])
    windows = [timeline_window(trace, rank, int(info["start_ns"]), int(info["end_ns"]), max_items=OVERVIEW_ITEMS)]
    chosen = _median_step(info, step)
    if chosen is not None and windows[0].mode != "events":
        a, b = int(chosen["start_ns"]), max(int(chosen["end_ns"]), int(chosen["start_ns"]) + 1)
        w = timeline_window(trace, rank, a, b, max_items=STEP_ITEMS)
        windows.append(w)
        if w.mode != "events" and w.event_count > 0:
            part = max(int((b - a) * STEP_ITEMS / w.event_count / 2), 1)
            windows.append(timeline_window(trace, rank, a, a + part, max_items=STEP_ITEMS))
    listed = [w.events["row"] for w in windows if w.events is not None]
    details = details_table(trace, rank, np.concatenate(listed)) if listed else None
    return {"step": None if chosen is None else int(chosen["step"]),
            "windows": [compact_window(w.to_dict()) for w in windows], "details": details}


def run_payload(bundle: Bundle, doc: Mapping[str, Any], *, title: str | None = None,
                step: int | None = None) -> dict[str, Any]:
    """Everything the app asks about an analysed run, from its §12 document and its trace."""
    trace = bundle.trace
    ranks = [int(r["rank"]) for r in doc.get("ranks") or []]
    with bundle.memo.active():
        infos = {r: rank_info(trace, r) for r in ranks}
        timeline = {str(r): timeline_snapshot(trace, infos[r], step) for r in _snapshot_ranks(doc, ranks)}
        memory = {str(r): memory_of(trace, r) for r in ranks}
    return {"format": FORMAT, "version": 1, "kind": "run", "title": title or default_title(trace.source),
            "doc": doc, "memory": memory, "info": {"ranks": list(infos.values())}, "timeline": timeline}


def document_payload(doc: Mapping[str, Any], *, title: str) -> dict[str, Any]:
    """A saved document without its trace: no memory curves, no timeline (both need the trace)."""
    return {"format": FORMAT, "version": 1, "kind": "run", "title": title, "doc": doc, "memory": {},
            "info": {"ranks": []}, "timeline": {}}


def diff_payload(diff_doc: Mapping[str, Any], *, title: str,
                 runs: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """A diff report; ``runs`` (from :func:`aligned_runs`) lets its aligned timelines draw."""
    out = {"format": FORMAT, "version": 1, "kind": "diff", "title": title, "diff": diff_doc}
    if runs:
        out["runs"] = dict(runs)
    return out


def aligned_runs(base: Trace, base_rank: int, new: Trace, new_rank: int, *,
                 max_ranks: int = ALIGNED_RANKS) -> dict[str, dict[str, Any]]:
    """Both sides' compared rank, then the other ranks both runs have (at most ``max_ranks`` per side):
    ``info`` and a timeline snapshot at the same step ordinal (BASE's compared rank's median step; each
    rank's step at that position, or its last)."""
    others = sorted(set(base.rank_ids) & set(new.rank_ids) - {base_rank, new_rank})
    sides = [[base_rank, *others][:max_ranks], [new_rank, *others][:max_ranks]]
    infos = [[rank_info(trace, r) for r in ranks] for trace, ranks in zip((base, new), sides)]
    chosen = _median_step(infos[0][0], None)
    k = next((i for i, s in enumerate(infos[0][0]["steps"]) if chosen is not None and s["step"] == chosen["step"]), 0)
    out = {}
    for side, trace, side_infos in zip(("base", "new"), (base, new), infos):
        timeline = {}
        for info in side_infos:
            steps = info["steps"]
            step = int(steps[min(k, len(steps) - 1)]["step"]) if steps else None
            timeline[str(info["rank"])] = timeline_snapshot(trace, info, step)
        out[side] = {"info": {"ranks": side_infos}, "timeline": timeline}
    return out


def snapshot_section(path: str | Path) -> dict[str, Any]:
    """An allocator snapshot as the report carries it (what ``serve`` answers about it, precomputed): the
    summary, per device the whole curve and windows around its peak, and the allocations live at the peak
    (the :data:`SNAPSHOT_ALLOCATIONS` largest). Read by the restricted reader: a snapshot is untrusted."""
    p = Path(path)
    res = analyse_snapshot(RunEntry(id="report", label=p.name, path=p, kind="snapshot"))
    return {"summary": json.loads(res.doc),
            "curves": {str(d): peak_windows(res, d, SNAPSHOT_POINTS) for d in res.devices},
            "allocations": {str(d): allocations_page(res, d, 0, SNAPSHOT_ALLOCATIONS) for d in res.devices}}


def snapshot_payload(section: Mapping[str, Any], *, title: str) -> dict[str, Any]:
    """A report of an allocator snapshot alone (``report --snapshot FILE -o r.html``)."""
    return {"format": FORMAT, "version": 1, "kind": "snapshot", "title": title, "snapshot": dict(section)}


def write_text(path: str | Path, text: str) -> int:
    """Write atomically-enough for a report (temp file + rename); returns the size in bytes."""
    p = Path(path)
    data = text.encode("utf-8")
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(p)
    return len(data)
