"""One measured job per process: ``python bench/probes.py TOOL PATH``.

``bench/run.py`` starts this script in a fresh interpreter for every (tool, file) pair, with the
interpreter of the venv the tool lives in (stepscope: the project's ``.venv``; peers and raw
decoders: ``bench/.venv-peers``). The script imports the tool, then times only the tool's work
(``work_s``: from just before the file is opened to the end of the analysis, imports excluded) and
prints one JSON line, prefixed with ``PROBE_RESULT``, holding ``work_s``, optional named parts and a
small ``check`` dict proving the work was done (event counts, step counts, a headline number).

PATH is a trace file (``.json`` or ``.json.gz``) or, for the tools that want one, the run
directory that holds it (HTA and the TensorBoard plugin take a directory; the runner passes both).

Only the standard library is imported at module level: each tool's imports happen inside its probe.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Check = dict[str, Any]


def _read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def _trace_file(path: Path) -> Path:
    """The single trace file of PATH (PATH itself, or the one trace file inside a run directory)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if ".json" in p.name)
        if len(files) != 1:
            raise SystemExit(f"{path}: expected exactly one trace file, found {len(files)}")
        return files[0]
    return path


# --- raw decoders: file bytes -> Python objects, nothing else ------------------------------------


def _raw(decode: Callable[[bytes], Any], path: Path) -> tuple[float, dict[str, float], Check]:
    t0 = time.perf_counter()
    data = _read_bytes(_trace_file(path))
    t1 = time.perf_counter()
    obj = decode(data)
    t2 = time.perf_counter()
    events = obj["traceEvents"] if isinstance(obj, dict) else obj.traceEvents
    return t2 - t0, {"read_s": t1 - t0, "decode_s": t2 - t1}, {"events": len(events)}


def probe_msgspec_typed(path: Path) -> tuple[float, dict[str, float], Check]:
    return _msgspec_typed(path, gc_tracked=False)


def probe_msgspec_typed_gc(path: Path) -> tuple[float, dict[str, float], Check]:
    return _msgspec_typed(path, gc_tracked=True)


def _msgspec_typed(path: Path, gc_tracked: bool) -> tuple[float, dict[str, float], Check]:
    """Typed decode; ``gc_tracked=False`` declares the Struct ``gc=False`` (msgspec's own advice
    for large decodes: the collector never scans the millions of events)."""
    import msgspec

    # The Struct types are built with defstruct: class bodies here would be strings under
    # ``from __future__ import annotations`` and could not be resolved in a local scope.
    event = msgspec.defstruct(
        "Event",
        [
            ("ph", str, ""),
            ("cat", str, ""),
            ("name", str, ""),
            ("pid", int | str, 0),
            ("tid", int | str, 0),
            ("ts", int | float, 0),
            ("dur", int | float, 0),
            ("args", msgspec.Raw, msgspec.Raw(b"{}")),
        ],
        gc=gc_tracked,
    )
    kineto_trace = msgspec.defstruct("KinetoTrace", [("traceEvents", list[event])])  # type: ignore[valid-type]

    decoder = msgspec.json.Decoder(kineto_trace)
    return _raw(decoder.decode, path)


def probe_msgspec_untyped(path: Path) -> tuple[float, dict[str, float], Check]:
    import msgspec

    return _raw(msgspec.json.decode, path)


def probe_orjson(path: Path) -> tuple[float, dict[str, float], Check]:
    import orjson  # type: ignore[import-not-found,unused-ignore]

    return _raw(orjson.loads, path)


def probe_json_stdlib(path: Path) -> tuple[float, dict[str, float], Check]:
    return _raw(json.loads, path)


# --- stepscope -----------------------------------------------------------------------------------


def _stepscope_check(trace: Any) -> Check:
    """A few numbers that show the trace was really built (whatever the Trace API offers)."""
    check: Check = {}
    for attr in ("n_events", "event_count", "num_events"):
        value = getattr(trace, attr, None)
        if isinstance(value, int):
            check["events"] = value
            break
    for attr in ("events", "ops", "kernels", "steps", "ranks"):
        value = getattr(trace, attr, None)
        if value is None or callable(value):
            continue
        for n_attr in ("num_rows", "n_rows", "__len__"):
            n = getattr(value, n_attr, None)
            if n is not None:
                check[attr] = n() if callable(n) else n
                break
    diags = getattr(trace, "diagnostics", None)
    if diags is not None:
        with contextlib.suppress(TypeError):
            check["diagnostics"] = len(diags)
    return check


def _stepscope(path: Path, use_cache: bool) -> tuple[float, dict[str, float], Check]:
    from stepscope import load  # the reader's imports, outside the timing

    gc.collect()
    t0 = time.perf_counter()
    trace = load(str(_trace_file(path)), use_cache=use_cache)
    t1 = time.perf_counter()
    return t1 - t0, {}, _stepscope_check(trace)


def probe_stepscope(path: Path) -> tuple[float, dict[str, float], Check]:
    return _stepscope(path, use_cache=False)


def probe_stepscope_cache(path: Path) -> tuple[float, dict[str, float], Check]:
    return _stepscope(path, use_cache=True)


# --- peers ---------------------------------------------------------------------------------------


def probe_hta(path: Path) -> tuple[float, dict[str, float], Check]:
    """HolisticTraceAnalysis: ``TraceAnalysis(trace_dir=...)`` then ``get_temporal_breakdown()``."""
    import logging

    from hta.trace_analysis import TraceAnalysis  # type: ignore[import-not-found,unused-ignore]

    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    analyzer = TraceAnalysis(trace_dir=str(path))
    t1 = time.perf_counter()
    breakdown = analyzer.get_temporal_breakdown(visualize=False)
    t2 = time.perf_counter()
    row = breakdown.iloc[0].to_dict()
    df = analyzer.t.get_trace(next(iter(analyzer.t.traces)))
    check = {
        "events": len(df),
        "idle_time_pctg": float(row.get("idle_time_pctg", float("nan"))),
        "compute_time_pctg": float(row.get("compute_time_pctg", float("nan"))),
    }
    return t2 - t0, {"load_s": t1 - t0, "temporal_breakdown_s": t2 - t1}, check


def probe_tb_plugin(path: Path) -> tuple[float, dict[str, float], Check]:
    """torch-tb-profiler: what the plugin does when a run is opened, then the overview view.

    The plugin's ``_load_run`` builds ``RunLoader(name, run_dir, cache).load()`` for every run it
    finds; the loader parses each worker file in a spawned process (``RunProfileData.parse`` +
    ``RunGenerator.generate_run_profile()``, which computes every view, overview included) and sends
    the profile back through a multiprocessing queue. The overview route then only reads
    ``profile.overview``. We do exactly that, minus the HTTP server.
    """
    import logging

    from torch_tb_profiler import io as tbio  # type: ignore[import-not-found,unused-ignore]
    from torch_tb_profiler.profiler import RunLoader  # type: ignore[import-not-found,unused-ignore]

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="tbcache-") as cache_dir:
        cache = tbio.Cache(cache_dir)
        t0 = time.perf_counter()
        run = RunLoader("bench", str(path), cache).load()
        t1 = time.perf_counter()
        workers = [w for w in run.workers if w != "All"]
        if not workers:
            raise SystemExit("tb plugin loaded no worker (parse failed)")
        spans = run.get_spans(workers[0])
        profile = run.get_profile(workers[0], spans[0] if spans else None)
        overview = profile.overview
        steps = overview.get("steps", {}).get("rows", []) if isinstance(overview, dict) else []
        t2 = time.perf_counter()
        check = {"workers": len(workers), "overview_step_rows": len(steps)}
        return t2 - t0, {"load_s": t1 - t0, "overview_s": t2 - t1}, check


def probe_msprof(path: Path) -> tuple[float, dict[str, float], Check]:
    """msprof-analyze: the single-trace overall-performance API on a GPU (Kineto) trace.json.

    ``ComparisonInterface(path).disaggregate_perf("overall")`` runs ``GPUProfilingParser.load_data``
    (an ijson stream over traceEvents) and the overall metrics: the half of ``msprof-analyze compare
    --enable_profiling_compare`` that reads one trace. It needs a plain ``.json`` file.
    """
    import logging

    from msprof_analyze.compare_tools.compare_interface.comparison_interface import (  # type: ignore[import-not-found,unused-ignore]
        ComparisonInterface,
    )

    logging.disable(logging.WARNING)
    trace = _trace_file(path)
    if trace.suffix != ".json":
        raise SystemExit(f"msprof-analyze reads only plain .json traces, not {trace.name}")
    t0 = time.perf_counter()
    result = ComparisonInterface(str(trace)).disaggregate_perf("overall")
    t1 = time.perf_counter()
    if not result:
        raise SystemExit("msprof-analyze returned no result (it logs and swallows its errors)")
    overall = result.get("overall", {})
    check = {"e2e_time_ms": overall.get("e2e_time_ms"), "computing_time_ms": overall.get("computing_time_ms")}
    return t1 - t0, {}, check


PROBES: dict[str, Callable[[Path], tuple[float, dict[str, float], Check]]] = {
    "stepscope": probe_stepscope,
    "stepscope_cache": probe_stepscope_cache,
    "msgspec_typed": probe_msgspec_typed,
    "msgspec_typed_gc": probe_msgspec_typed_gc,
    "msgspec_untyped": probe_msgspec_untyped,
    "orjson": probe_orjson,
    "json_stdlib": probe_json_stdlib,
    "hta": probe_hta,
    "tb_plugin": probe_tb_plugin,
    "msprof": probe_msprof,
}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in PROBES:
        print(f"usage: probes.py {{{','.join(PROBES)}}} PATH", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    work_s, parts, check = PROBES[argv[1]](Path(argv[2]))
    result = {
        "work_s": work_s,
        "parts": parts,
        "check": check,
        "probe_total_s": time.perf_counter() - t_start,
        "pid": os.getpid(),
    }
    print("PROBE_RESULT " + json.dumps(result, default=str), flush=True)
    # Reap finished children (the TB plugin's spawned parser) so that their CPU time is counted in
    # this process's rusage, which the runner reads with wait4.
    import multiprocessing

    for child in multiprocessing.active_children():
        if "Manager" not in child.name:  # a manager serves until shut down: leave it to the runner
            child.join(timeout=10)
    # Skip interpreter teardown (freeing GBs of objects): the measurement is done.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
