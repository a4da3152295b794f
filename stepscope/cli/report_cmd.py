"""``stepscope report PATH -o report.html``: the shareable report of a trace; ``--md`` makes it the
Markdown summary instead (to ``-o FILE``, else stdout), as ``--md`` does on ``analyze`` and ``diff``.

PATH is a trace (file or run directory, like ``analyze``) or a saved ``--json`` document of
``analyze`` or ``diff`` (then the page is drawn from the document alone, without the timeline).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import click

from stepscope.cli.common import MD_HELP, InputPath, emit, load_trace, map_reduce_option, map_reduce_run, trace_options
from stepscope.errors import StepscopeError

_SNIFF_BYTES = 4096


def saved_document(path: str | None) -> dict[str, Any] | None:
    """The §12 document stored at ``path``, or None when ``path`` is not one (e.g. a trace)."""
    if path is None:
        return None
    p = Path(path)
    if not p.is_file() or p.suffix != ".json":
        return None
    with p.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if b'"schema_version"' not in head or b'"traceEvents"' in head:
        return None
    try:
        doc = _without_lone_surrogates(json.loads(p.read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError) as exc:
        raise StepscopeError(f"not a readable stepscope JSON document ({exc})", path) from exc
    return doc if isinstance(doc, dict) and ("ranks" in doc or "overall" in doc) else None


def _without_lone_surrogates(doc: Any) -> Any:
    """``doc`` with each lone surrogate (``"\\ud800"`` is valid JSON, not valid UTF-8: the page could
    not be written) replaced by ``?``."""
    text = json.dumps(doc, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.loads(text.encode("utf-8", "replace"))
    return doc


def _document_of_trace(path: str | None, no_cache: bool, span: str | None, ranks: tuple[int, ...],
                       map_reduce: bool | None = None) -> dict[str, Any]:
    from stepscope.analysis.bundle import analyze
    from stepscope.cli.analyze_cmd import findings_for
    from stepscope.report import json_out
    from stepscope.report.advice_json import finding_dict

    mr = map_reduce_run(path, map_reduce, no_cache, span, ranks)
    if mr is not None:
        return mr.document
    bundle = analyze(load_trace(path, no_cache, span, ranks))
    with bundle.memo.active():
        return json_out.to_json(bundle, [finding_dict(f) for f in findings_for(bundle)])


def _from_trace(path: str | None, title: str | None, step: int | None, no_cache: bool, span: str | None,
                ranks: tuple[int, ...], snapshot: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    from stepscope.analysis.bundle import analyze
    from stepscope.cli.analyze_cmd import findings_for
    from stepscope.report import json_out
    from stepscope.report.advice_json import finding_dict
    from stepscope.server.standalone import render_page, run_payload

    trace = load_trace(path, no_cache, span, ranks)
    bundle = analyze(trace)
    with bundle.memo.active():
        findings = [finding_dict(f) for f in findings_for(bundle)]
        doc = json_out.to_json(bundle, findings)
        payload = run_payload(bundle, doc, title=title, step=step)
        return doc, render_page({**payload, "snapshot": snapshot} if snapshot else payload)


def _from_document(doc: dict[str, Any], path: str, title: str | None, snapshot: dict[str, Any] | None = None) -> str:
    from stepscope.server.standalone import default_title, diff_payload, document_payload, render_page

    if "overall" in doc and "ranks" not in doc:
        from stepscope.report.diff_text import diff_title

        return render_page(diff_payload(_checked_diff(doc), title=title or diff_title(doc)))
    name = title or default_title(str(doc.get("source") or path))
    payload = document_payload(_checked_run(doc), title=name)
    return render_page({**payload, "snapshot": snapshot} if snapshot else payload)


def _checked_run(doc: dict[str, Any]) -> dict[str, Any]:
    """The saved analysis document, if the app can draw it: ``ranks`` a list of objects with an int
    ``rank`` and, when present, a list of objects with a ``step`` as ``steps`` (else ValueError / TypeError)."""
    ranks = doc.get("ranks")
    if not isinstance(ranks, list) or not all(isinstance(r, dict) for r in ranks):
        raise TypeError("ranks must be a list of objects")
    for r in ranks:
        if not isinstance(r.get("rank"), int) or isinstance(r.get("rank"), bool):
            raise ValueError(f"ranks[].rank must be an integer, not {r.get('rank')!r}")
        steps = r.get("steps")
        if steps is not None and not (isinstance(steps, list) and all(isinstance(x, dict) and isinstance(
                x.get("step"), (int, str)) for x in steps)):
            raise ValueError("ranks[].steps must be a list of objects, each with its step")
    return doc


def _checked_diff(doc: dict[str, Any]) -> dict[str, Any]:
    """The saved diff document, if ``overall`` is a list of objects (else TypeError)."""
    overall = doc.get("overall")
    if not isinstance(overall, list) or not all(isinstance(r, dict) for r in overall):
        raise TypeError("overall must be a list of objects")
    return doc


@click.command("report", short_help="Write a self-contained HTML (or Markdown) report.")
@click.argument("path", required=False, type=InputPath())
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the self-contained HTML report (with --md, or to a FILE ending in .md: the Markdown "
                   "summary) to FILE.")
@click.option("--md", "as_md", is_flag=True, help=MD_HELP)
@click.option("--title", default=None, help="Page title (default: the trace's name).")
@click.option("--step", type=int, default=None, help="Step shown in the timeline (default: the median one).")
@click.option("--snapshot", "snapshot_path", type=InputPath(dir_okay=False), default=None,
              help="Also carry this allocator snapshot (torch.cuda.memory._dump_snapshot pickle) in the report's "
                   "Memory snapshot view; without PATH, a report of the snapshot alone.")
@map_reduce_option
@trace_options
def command(path: str | None, output: str | None, as_md: bool, title: str | None, step: int | None,
            snapshot_path: str | None, no_cache: bool, span: str | None, ranks: tuple[int, ...],
            map_reduce: bool | None = None) -> None:
    """Write a self-contained HTML report of a trace (or of a saved --json document; with --snapshot, of
    an allocator snapshot too, or alone); with --md, the Markdown summary instead (to -o FILE, else stdout)."""
    from stepscope.server.standalone import write_text

    as_md = as_md or (output is not None and output.lower().endswith((".md", ".markdown")))  # what the name says
    if output is None and not as_md:
        raise click.UsageError("give -o FILE for the HTML report, or --md for the Markdown summary")
    if snapshot_path is not None and as_md:
        raise click.UsageError("--snapshot is shown by the HTML report (-o FILE); "
                               "`stepscope memory SNAPSHOT` prints it")
    snapshot = _snapshot(snapshot_path)
    if snapshot is not None and path is None:
        _write_snapshot_report(snapshot, snapshot_path or "", output or "", title)
        return
    doc = saved_document(path)
    if as_md:
        if doc is None:
            md = _markdown(_document_of_trace(path, no_cache, span, ranks, map_reduce), path, title)
        else:
            md = _of_saved(str(path), partial(_markdown, doc, path, title))
        emit(md, output)
        return
    if map_reduce:
        raise click.UsageError("--map-reduce makes the document of --md; the HTML page reads the whole model")
    if doc is not None:
        page = _of_saved(str(path), partial(_from_document, doc, str(path), title, snapshot))
    else:
        doc, page = _from_trace(path, title, step, no_cache, span, ranks, snapshot)
    assert output is not None
    size = write_text(output, page)
    click.echo(f"wrote {output} ({size / 1024:,.0f} kB)", err=True)


def _snapshot(path: str | None) -> dict[str, Any] | None:
    """The allocator snapshot as a report carries it (read by the restricted reader), or None."""
    if path is None:
        return None
    from stepscope.server.standalone import snapshot_section

    return snapshot_section(path)


def _write_snapshot_report(snapshot: dict[str, Any], path: str, output: str, title: str | None) -> None:
    from stepscope.server.standalone import render_page, snapshot_payload, write_text

    size = write_text(output, render_page(snapshot_payload(snapshot, title=title or f"stepscope · {Path(path).name}")))
    click.echo(f"wrote {output} ({size / 1024:,.0f} kB)", err=True)


def _markdown(doc: dict[str, Any], path: str | None, title: str | None) -> str:
    from stepscope.report.markdown import render_markdown
    from stepscope.server.standalone import default_title

    is_diff = "overall" in doc and "ranks" not in doc
    name = None if is_diff else default_title(str(doc.get("source") or path or ""))
    return render_markdown(doc, title=title or name)


#: what rendering a saved document of the wrong shape raises (``ranks[0].rank: "x"`` ...)
_SHAPE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError)


def _of_saved(path: str, render: Callable[[], str]) -> str:
    """``render()`` of a saved document (the page or the Markdown); one StepscopeError naming the file
    when the document is not of the shape ``analyze --json`` / ``diff --json`` write."""
    try:
        return render()
    except _SHAPE_ERRORS as exc:
        why = " ".join(str(exc).split())[:200]
        raise StepscopeError(f"not a valid stepscope JSON document ({type(exc).__name__}: {why})", path) from None
