"""Which files make up a run: one file, a ``tensorboard_trace_handler`` directory, or per-rank files.

``tensorboard_trace_handler`` writes ``<worker>.<timestamp>.pt.trace.json[.gz]``: several workers
are ranks, several timestamps of one worker are spans (successive profiling windows).
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from stepscope.errors import NoTraceFoundError, TraceFormatError, UsageError

TB_NAME = re.compile(r"^(?P<worker>.+)\.(?P<ts>\d+)\.pt\.trace\.json(?:\.gz)?$")
TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".pftrace", ".pftrace.gz", ".perfetto-trace", ".perfetto-trace.gz")
#: Perfetto protobuf traces (PyTorch's CUPTI backend): their names are enough, there is no text to sniff
PFTRACE_SUFFIXES = (".pftrace", ".pftrace.gz", ".perfetto-trace", ".perfetto-trace.gz")


@dataclass(frozen=True)
class RunFiles:
    """The files chosen for one load, with their worker names and span labels."""

    files: tuple[str, ...]
    workers: tuple[str, ...]
    span: str  # the chosen span's timestamp ("" when not a tensorboard_trace_handler layout)
    spans: tuple[str, ...]  # every span found (timestamps, ascending)
    skipped: tuple[str, ...] = ()  # rank directories of the run with no trace in them (said, not lost)
    side: tuple[str, ...] = ()  # files beside the traces with a trace's name that hold none (said, not read)
    span_why: str = ""  # why the default span is not the latest one (a fragment after it)


def _is_trace_name(p: Path) -> bool:
    return p.is_file() and p.name.endswith(TRACE_SUFFIXES) and not p.name.startswith(".")


ASCEND_TRACE = "ASCEND_PROFILER_OUTPUT/trace_view.json"
ASCEND_DB = "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db"
ASCEND_SUMMARIES = "ASCEND_PROFILER_OUTPUT/kernel_details.csv"


def _looks_like_trace(p: Path) -> bool:
    """Cheap sniff so that side files (metadata, configs) in a run directory are not read as traces."""
    if p.suffix == ".sqlite" or p.name.endswith(PFTRACE_SUFFIXES):
        return True
    try:
        opener = gzip.open if p.name.endswith(".gz") else open
        with opener(p, "rb") as fh:
            head = fh.read(4096)
    except (OSError, EOFError):
        return True  # unreadable: let the reader report it
    return b"traceEvents" in head or b'"ph"' in head or not head.strip()


def ascend_files(root: Path) -> list[Path]:
    """Per ``*_ascend_pt`` directory (or ``root`` itself): its trace_view.json, else its profiler database,
    else its summaries (``kernel_details.csv`` and the files beside it, see ``readers/ascend_csv.py``);
    empty when ``root`` is no Ascend export (``stepscope serve`` finds its runs with it too)."""
    out: list[Path] = []
    for d in [*sorted(root.glob("*_ascend_pt")), root]:
        out += _ascend_run(d, ASCEND_TRACE, ASCEND_DB, ASCEND_SUMMARIES)
    if out:
        return out
    if root.name == Path(ASCEND_TRACE).parent.name:  # root is ASCEND_PROFILER_OUTPUT itself
        return _ascend_run(root, *(Path(p).name for p in (ASCEND_TRACE, ASCEND_DB, ASCEND_SUMMARIES)))
    return sorted(root.glob(Path(ASCEND_DB).name))[:1]


def _ascend_run(d: Path, trace: str, db: str, summaries: str) -> list[Path]:
    """The one file that stands for an Ascend run directory, best first (none when it is not one)."""
    dbs = sorted(d.glob(db))
    for found in ([d / trace], dbs[:1], [d / summaries]):
        if found and found[0].is_file():
            return found
    return []


def ascend_traceless(root: Path) -> tuple[str, ...]:
    """The ``*_ascend_pt`` rank directories under ``root`` that hold no trace (their rank is not read)."""
    names = (ASCEND_TRACE, ASCEND_DB, ASCEND_SUMMARIES)
    return tuple(str(d) for d in sorted(root.glob("*_ascend_pt")) if d.is_dir() and not _ascend_run(d, *names))


def _refuse_traceless_ascend(root: Path) -> None:
    """An Ascend export (its ``ASCEND_PROFILER_OUTPUT``, or the ``profiler_info*.json`` beside it)
    whose trace is gone is refused naming where the trace should be, not read through its side files
    (``profiler_info_0.json`` is no trace)."""
    out_name = Path(ASCEND_TRACE).parent.name
    for d in [*sorted(root.glob("*_ascend_pt")), root]:
        out = d / out_name
        if out.is_dir() or any(p.is_file() for p in d.glob("profiler_info*.json")):
            wanted = ", ".join(Path(p).name for p in (ASCEND_TRACE, ASCEND_DB, ASCEND_SUMMARIES))
            raise NoTraceFoundError(f"an Ascend profiler export without its trace (none of {wanted})", out)


def _candidates(root: Path) -> list[Path]:
    ascend = ascend_files(root)
    if ascend:
        return ascend
    _refuse_traceless_ascend(root)
    direct = sorted(p for p in root.iterdir() if _is_trace_name(p))
    if direct:  # side files (a timing or config .json beside the traces) are not read, when traces are there
        return [p for p in direct if _looks_like_trace(p)] or direct
    return sorted(p for p in root.rglob("*") if _is_trace_name(p) and _looks_like_trace(p))


def side_files(root: Path, files: list[Path]) -> tuple[str, ...]:
    """The files of ``root`` with a trace's name that are not read: side files beside the traces."""
    chosen = set(files)
    return tuple(str(p) for p in sorted(root.iterdir()) if _is_trace_name(p) and p not in chosen)


def resolve(path: str | Path, span: str | int | None = None) -> RunFiles:
    """The trace files a path stands for; ``span`` picks a span by 1-based index or timestamp."""
    p = Path(path)
    if not p.exists():
        raise TraceFormatError("no such file or directory", p)
    if p.is_file():
        return RunFiles((str(p),), (p.name,), "", ())
    files = _candidates(p)
    if not files:
        raise NoTraceFoundError("no trace file (*.json, *.json.gz, *.sqlite, *.pftrace) in this directory", p)
    side = () if ascend_files(p) else side_files(p, files)
    tb = [(f, TB_NAME.match(f.name)) for f in files]
    if not all(m for _, m in tb):
        return RunFiles(tuple(map(str, files)), tuple(f.name for f in files), "", (), ascend_traceless(p), side)
    first_worker = sorted({m.group("worker") for _, m in tb if m})[0]
    spans = sorted((m.group("ts") for _, m in tb if m and m.group("worker") == first_worker), key=int)
    chosen, why = (_pick_span(spans, span, p), "") if span is not None else _default_span(spans, tb)
    picked = [(f, m) for f, m in tb if m and _span_of(m.group("worker"), m.group("ts"), tb) == chosen]
    return RunFiles(tuple(str(f) for f, _ in picked), tuple(m.group("worker") for _, m in picked if m),
                    chosen, tuple(spans), side=side, span_why=why)


def spans_note(run: RunFiles) -> str:
    """The ``multiple-spans`` diagnostic's words: how many spans, which is shown, and why where it is not the
    latest."""
    why = f": {run.span_why}" if run.span_why else ""
    return f"{len(run.spans)} spans found; showing span {run.span} (choose with --span N){why}"


#: a later span with less than this share of the largest span's bytes is a fragment, not the default
SPAN_MIN_SHARE = 0.5


def _default_span(spans: list[str], tb: list[tuple[Path, re.Match[str] | None]]) -> tuple[str, str]:
    """The latest span that is not a fragment — a profiler stopped in the middle of a cycle writes a last,
    small trace of a step or less — and why an earlier one was chosen ("" when it is the latest)."""
    size = dict.fromkeys(spans, 0)
    for f, m in tb:  # per file
        if m:
            size[_span_of(m.group("worker"), m.group("ts"), tb)] += _size(f)
    big = max(size.values())
    chosen = next(s for s in reversed(spans) if size[s] >= SPAN_MIN_SHARE * big)
    if chosen == spans[-1]:
        return chosen, ""
    many = len(spans) - spans.index(chosen) > 2
    return chosen, (f"the later span{'s hold' if many else ' holds'} under {SPAN_MIN_SHARE:.0%} of its bytes: "
                    "a fragment the profiler wrote as it stopped")


def _size(f: Path) -> int:
    try:
        return f.stat().st_size
    except OSError:
        return 0


def _span_of(worker: str, ts: str, tb: list[tuple[Path, re.Match[str] | None]]) -> str:
    """A worker's k-th timestamp belongs to span k; spans are labelled by the first worker's timestamps."""
    mine = sorted((m.group("ts") for _, m in tb if m and m.group("worker") == worker), key=int)
    k = mine.index(ts)
    first_worker = sorted({m.group("worker") for _, m in tb if m})[0]
    ref = sorted((m.group("ts") for _, m in tb if m and m.group("worker") == first_worker), key=int)
    return ref[min(k, len(ref) - 1)]


def _pick_span(spans: list[str], span: str | int | None, p: Path) -> str:
    workers_spans = spans
    if span is None:
        return workers_spans[-1]
    if isinstance(span, int) or (isinstance(span, str) and span.isdigit() and len(span) < 6):
        k = int(span)
        if not 1 <= k <= len(workers_spans):
            raise UsageError(f"span {k} not found: this run has spans 1..{len(workers_spans)}", p)
        return workers_spans[k - 1]
    if span not in workers_spans:
        raise UsageError(f"span {span} not found (have {', '.join(workers_spans)})", p)
    return span
