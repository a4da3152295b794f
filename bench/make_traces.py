"""Make large Kineto traces by repeating a real trace's profiler steps in time.

The source trace (a real 2021 ResNet-50 Kineto trace, 6 ProfilerSteps) is split into its header,
its events (each kept as the exact text Kineto wrote, one pretty-printed object per event) and its
tail. Each output file is the header, then ``k`` copies of the events, then the tail. In copy ``k``:

* every ``"ts"`` and ``"external ts"`` is shifted by ``k * span`` (span = last event end - first
  event start of the source trace), so the copies follow each other in time;
* ``ProfilerStep#N`` names are renumbered ``N + k * n_steps``;
* ``External id`` / ``external id`` are offset by ``k * (max external id + 1)`` and ``correlation``
  and flow ``id`` (which share a namespace in Kineto) by ``k * (max correlation/id + 1)``, so they
  stay unique across copies.

Events that describe the whole trace (``ph: M`` metadata, the ``cat: Trace`` span, global instants
such as ``Record Window End``) are written once, after the copies, with the span stretched to cover
all copies. Only the number text inside each event changes, so the layout is the one Kineto writes.

Output goes to ``bench/data/`` (gitignored): ``kineto_<size>mb.json`` plus a directory
``kineto_<size>mb/worker0.<ts>.pt.trace.json`` (a hard link to the same file) for tools that want a
``tensorboard_trace_handler`` directory. The copies are generated and written one at a time, so
memory stays at about twice the source trace whatever the output size.

``--dense N`` instead writes ``kineto_dense_<N>.json``: an event-dense synthetic trace of N small
events (see :func:`write_dense`), the shape that stresses per-event cost rather than bytes.

Usage: ``python bench/make_traces.py [--sizes 100,500,1000] [--source PATH] [--out bench/data]``
       ``python bench/make_traces.py --dense 5000000``
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_SOURCE = Path(
    "/work/shared/traces/kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
)
DEFAULT_OUT = BENCH_DIR / "data"
MB = 1_000_000

# Kinds of number slots inside one event's text.
TS, EXT, CORR, STEP = 0, 1, 2, 3

_SLOT_RE = re.compile(
    r'"(?P<key>ts|external ts|External id|external id|correlation|id)":\s*(?P<num>-?\d+(?:\.\d+)?)'
    r'|"name":\s*"(?:ProfilerStep#)(?P<step>\d+)"'
)
_KEY_KIND = {
    "ts": TS,
    "external ts": TS,
    "External id": EXT,
    "external id": EXT,
    "correlation": CORR,
    "id": CORR,
}


@dataclass
class Template:
    """The repeatable events of a trace, as literal text with number slots between."""

    literals: list[str]  # len(literals) == len(kinds) + 1
    kinds: list[int]
    values: list[int | float]
    span: int | float
    ext_offset: int
    corr_offset: int
    step_offset: int
    first_ts: int | float
    last_end: int | float


def _num(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def _split_events(text: str) -> tuple[str, list[tuple[int, int, dict[str, object]]], str]:
    """Return (header, [(start, end, event)], tail) for the traceEvents array of ``text``."""
    key = text.find('"traceEvents"')
    if key < 0:
        raise SystemExit("source has no traceEvents")
    pos = text.index("[", key) + 1
    decoder = json.JSONDecoder()
    spans: list[tuple[int, int, dict[str, object]]] = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n or text[pos] == "]":
            break
        obj, end = decoder.raw_decode(text, pos)
        spans.append((pos, end, obj))
        pos = end
    header = text[: spans[0][0]]
    tail = text[spans[-1][1] :]
    return header, spans, tail


def _is_singleton(ev: dict[str, object]) -> bool:
    """Events that describe the whole trace rather than one moment of it."""
    return ev.get("ph") == "M" or ev.get("cat") == "Trace" or (ev.get("ph") == "i" and ev.get("s") == "g")


def build_template(text: str) -> tuple[str, Template, list[tuple[str, dict[str, object]]], str, str]:
    """Split the source into header, the repeatable template, singleton events, separator, tail."""
    header, spans, tail = _split_events(text)
    sep = text[spans[0][1] : spans[1][0]] if len(spans) > 1 else ",\n  "
    first_ts: int | float | None = None
    last_end: int | float | None = None
    for _, _, ev in spans:
        ts = ev.get("ts")
        if isinstance(ts, (int, float)):
            dur = ev.get("dur", 0)
            end = ts + (dur if isinstance(dur, (int, float)) else 0)
            first_ts = ts if first_ts is None else min(first_ts, ts)
            last_end = end if last_end is None else max(last_end, end)
    if first_ts is None or last_end is None:
        raise SystemExit("source has no timestamps")

    literals: list[str] = []
    kinds: list[int] = []
    values: list[int | float] = []
    singletons: list[tuple[str, dict[str, object]]] = []
    buf: list[str] = []
    max_ext = 0
    max_corr = 0
    steps: list[int] = []
    first = True
    for start, end, ev in spans:
        ev_text = text[start:end]
        if _is_singleton(ev):
            singletons.append((ev_text, ev))
            continue
        if not first:
            buf.append(sep)
        first = False
        last = 0
        for m in _SLOT_RE.finditer(ev_text):
            if m.group("step") is not None:
                buf.append(ev_text[last : m.start("step")])
                literals.append("".join(buf))
                buf = []
                kinds.append(STEP)
                values.append(int(m.group("step")))
                steps.append(int(m.group("step")))
                last = m.end("step")
                continue
            kind = _KEY_KIND[m.group("key")]
            if kind == CORR and m.group("key") == "id" and ev.get("ph") not in ("s", "f", "t"):
                continue  # an "id" that is not a flow id: leave it alone
            value = _num(m.group("num"))
            buf.append(ev_text[last : m.start("num")])
            literals.append("".join(buf))
            buf = []
            kinds.append(kind)
            values.append(value)
            if kind == EXT:
                max_ext = max(max_ext, int(value))
            elif kind == CORR:
                max_corr = max(max_corr, int(value))
            last = m.end("num")
        buf.append(ev_text[last:])
    literals.append("".join(buf))
    step_offset = (max(steps) - min(steps) + 1) if steps else 0
    template = Template(
        literals=literals,
        kinds=kinds,
        values=values,
        span=last_end - first_ts,
        ext_offset=max_ext + 1,
        corr_offset=max_corr + 1,
        step_offset=step_offset,
        first_ts=first_ts,
        last_end=last_end,
    )
    return header, template, singletons, sep, tail


def _fmt(value: int | float) -> str:
    if isinstance(value, float):
        return repr(round(value, 3))
    return str(value)


def render_copy(t: Template, k: int) -> str:
    """The text of copy ``k`` of the repeatable events (no leading or trailing separator)."""
    offsets = (t.span * k, t.ext_offset * k, t.corr_offset * k, t.step_offset * k)
    if k == 0:
        nums = [_fmt(v) for v in t.values]
    else:
        nums = [_fmt(v + offsets[kind]) for v, kind in zip(t.values, t.kinds, strict=True)]
    out = [t.literals[0]]
    for lit, num in zip(t.literals[1:], nums, strict=True):
        out.append(num)
        out.append(lit)
    return "".join(out)


def _singleton_text(ev_text: str, ev: dict[str, object], t: Template, copies: int) -> str:
    """Stretch whole-trace events over all copies: the Trace span's dur, the window-end instant."""
    extra = t.span * (copies - 1)
    if ev.get("cat") == "Trace" and isinstance(ev.get("dur"), (int, float)):
        dur = ev["dur"]
        assert isinstance(dur, (int, float))
        return re.sub(r'"dur":\s*-?\d+(?:\.\d+)?', f'"dur": {_fmt(dur + extra)}', ev_text, count=1)
    ts = ev.get("ts")
    if ev.get("ph") == "i" and isinstance(ts, (int, float)) and ts > t.first_ts:
        return re.sub(r'"ts":\s*-?\d+(?:\.\d+)?', f'"ts": {_fmt(ts + extra)}', ev_text, count=1)
    return ev_text


def write_trace(
    path: Path,
    header: str,
    t: Template,
    singletons: list[tuple[str, dict[str, object]]],
    sep: str,
    tail: str,
    copies: int,
) -> int:
    """Stream ``copies`` copies to ``path`` (atomically); return the bytes written."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(header)
        for k in range(copies):
            if k:
                fh.write(sep)
            fh.write(render_copy(t, k))
        for ev_text, ev in singletons:
            fh.write(sep)
            fh.write(_singleton_text(ev_text, ev, t, copies))
        fh.write(tail)
    os.replace(tmp, path)
    return path.stat().st_size


def read_source(source: Path) -> str:
    raw = source.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def make(sizes_mb: list[int], source: Path, out: Path, force: bool = False) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    todo = [s for s in sizes_mb if force or not (out / f"kineto_{s}mb.json").exists()]
    if todo:
        text = read_source(source)
        header, t, singletons, sep, tail = build_template(text)
        del text
        copy_bytes = len(render_copy(t, 1).encode("utf-8")) + len(sep)
        fixed = len(header) + len(tail) + sum(len(s) + len(sep) for s, _ in singletons)
    # The trace-handler file name carries a millisecond wall-clock stamp: keep the source's.
    m = re.search(r"\.(\d{10,})\.pt\.trace\.json", source.name)
    stamp = m.group(1) if m else str(int(time.time() * 1000))
    for size in sizes_mb:
        path = out / f"kineto_{size}mb.json"
        if size not in todo:
            print(f"{path}: exists ({path.stat().st_size / MB:.0f} MB), kept (--force to redo)")
        else:
            copies = max(1, round((size * MB - fixed) / copy_bytes))
            t0 = time.perf_counter()
            nbytes = write_trace(path, header, t, singletons, sep, tail, copies)
            print(
                f"{path}: {copies} copies, {nbytes / MB:.1f} MB, "
                f"{copies * t.step_offset} steps, {time.perf_counter() - t0:.1f} s"
            )
        run_dir = out / f"kineto_{size}mb"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir()
        link = run_dir / f"worker0.{stamp}.pt.trace.json"
        try:
            os.link(path, link)
        except OSError:
            shutil.copyfile(path, link)
        made.append(path)
    # The real trace itself, as a run directory (a symlink: the trace stays in shared/).
    real_dir = out / "real_resnet50"
    real_dir.mkdir(exist_ok=True)
    real_link = real_dir / source.name
    if not real_link.exists():
        real_link.symlink_to(source)
    return made


# ---- the event-dense synthetic trace -------------------------------------------------------------

_DENSE_OPS = ("aten::add", "aten::mul", "aten::relu", "aten::copy_", "aten::fill_", "aten::sum",
              "aten::div", "aten::neg", "aten::exp", "aten::sigmoid", "aten::where", "aten::clamp")
_DENSE_KERNELS = tuple(f"elementwise_{op[6:]}_kernel" for op in _DENSE_OPS)
_DENSE_HEADER = (
    '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", '
    '"totalGlobalMem": 85029158912, "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, '
    '"maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, '
    '"warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472, "numSms": 132, '
    '"sharedMemPerBlockOptin": 232448}],\n"traceEvents": [\n'
)


def write_dense(path: Path, n_events: int, steps: int = 4) -> int:
    """Write a Kineto trace of about ``n_events`` small events; return the bytes written.

    Each launch is three events: a short ``cpu_op`` (2 us) on the main thread enclosing a
    ``cudaLaunchKernel`` (1 us, ``cuda_runtime``) and the kernel it launched (1.5 us, stream 7),
    linked by ``correlation`` (the op encloses the call; no ``External id`` on the call and kernel,
    no flow events). ``steps`` ``ProfilerStep#N`` annotations split the launches evenly. Compact
    JSON (~140 bytes an event: 5 M events = 704 MB), written in blocks of 10,000 launches so memory
    stays small."""
    launches = max(1, (n_events - steps - 1) // 3)
    per_step = -(-launches // steps)
    base_us = 1_000_000.0
    t_launch = 3.0  # us between launches: the host runs ahead, the GPU follows (1.5 us kernels)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(_DENSE_HEADER)
        fh.write('{"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":"PyTorch Profiler",'
                 f'"ts":{base_us:.3f},"dur":{launches * t_launch + 20:.3f}}}')
        for s in range(steps):
            first = s * per_step
            n = min(per_step, launches - first)
            if n <= 0:
                break
            ts0 = base_us + first * t_launch + 1
            fh.write(f',\n{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{s + 1}","pid":100,"tid":100,'
                     f'"ts":{ts0:.3f},"dur":{n * t_launch - 0.5:.3f},"args":{{"External id":{first * 2 + s + 1}}}}}')
            for lo in range(first, first + n, 10_000):
                fh.write(_dense_block(lo, min(lo + 10_000, first + n), base_us, t_launch, s))
        fh.write('\n],\n"traceName": "dense.pt.trace.json", "displayTimeUnit": "ms"}\n')
    os.replace(tmp, path)
    return path.stat().st_size


def _dense_block(lo: int, hi: int, base_us: float, t_launch: float, step: int) -> str:
    out = []
    for i in range(lo, hi):
        op = i % len(_DENSE_OPS)
        ts = base_us + i * t_launch + 1.5
        ext = i * 2 + step + 10
        corr = i + 1
        out.append(
            f',\n{{"ph":"X","cat":"cpu_op","name":"{_DENSE_OPS[op]}","pid":100,"tid":100,"ts":{ts:.3f},'
            f'"dur":2.000,"args":{{"External id":{ext}}}}}'
            f',\n{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":100,"tid":100,'
            f'"ts":{ts + 0.5:.3f},"dur":1.000,"args":{{"correlation":{corr}}}}}'
            f',\n{{"ph":"X","cat":"kernel","name":"{_DENSE_KERNELS[op]}","pid":0,"tid":7,"ts":{ts + 1.8:.3f},'
            f'"dur":1.500,"args":{{"correlation":{corr},"device":0,"stream":7}}}}'
        )
    return "".join(out)


def make_dense(n_events: int, out: Path, force: bool = False) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"kineto_dense_{n_events}.json"
    if path.exists() and not force:
        print(f"{path}: exists ({path.stat().st_size / MB:.0f} MB), kept (--force to redo)")
        return path
    t0 = time.perf_counter()
    nbytes = write_dense(path, n_events)
    print(f"{path}: {nbytes / MB:.1f} MB, {time.perf_counter() - t0:.1f} s")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sizes", default="100,500,1000", help="target sizes in MB, comma separated")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--force", action="store_true", help="rewrite files that already exist")
    ap.add_argument("--dense", type=int, default=0, help="write an event-dense trace of this many events instead")
    args = ap.parse_args(argv)
    if args.dense:
        make_dense(args.dense, args.out, force=args.force)
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    make(sizes, args.source, args.out, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
