"""Build tiny chrome-trace (Kineto) files for tests: hand-made events with hand-computable answers.

Times are given in µs like the real format. Usage::

    b = TraceBuilder()
    step = b.op("ProfilerStep#1", ts=0, dur=100, cat="user_annotation")
    op = b.op("aten::mm", ts=10, dur=20)
    b.launch_kernel("sgemm", launch_ts=12, launch_dur=3, ts=30, dur=40)
    trace = b.load(tmp_path)
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import stepscope
from stepscope.model.trace import Trace

V100 = {"id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079637504, "computeMajor": 7,
        "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 98304, "numSms": 80, "sharedMemPerBlockOptin": 98304}


class RawNumber:
    """A JSON number written exactly as given (``RawNumber("1712195495519689.047")``).

    A Python float cannot hold that value (float64 spacing at 1.7e15 is 0.25), so ns-resolution
    timestamps must be written as text to test that the reader keeps every digit.
    """

    def __init__(self, text: str) -> None:
        float(text)  # must be a JSON number
        self.text = text

    def __repr__(self) -> str:
        return f"RawNumber({self.text!r})"


#: a time or duration in µs: a number, or a RawNumber for exact decimal text
Time = float | RawNumber
_RAW_MARK = "@@stepscope-raw-number@@"
_RAW_RE = re.compile(f'"{_RAW_MARK}([^"]*)"')


def _raw_default(o: object) -> str:
    if isinstance(o, RawNumber):
        return _RAW_MARK + o.text
    raise TypeError(f"not JSON serializable: {o!r}")


def dumps(doc: Any, indent: int | None = 1) -> str:
    """``json.dumps`` that writes :class:`RawNumber` values verbatim."""
    text = json.dumps(doc, indent=indent, default=_raw_default)
    return _RAW_RE.sub(lambda m: m.group(1), text) if _RAW_MARK in text else text


def kargs(args: dict[str, Any]) -> dict[str, Any]:
    """Kineto arg keys with spaces as keyword arguments: ``b.op("aten::mm", 0, 5, **kargs({"External id": 3}))``
    (typed ``dict[str, Any]`` so that mypy accepts the unpacking next to typed parameters)."""
    return args


class TraceBuilder:
    """Accumulates events; ``write``/``load`` produce a Kineto-style JSON trace.

    The class attributes name the categories and arg keys of the (current) Kineto schema;
    :class:`OldTraceBuilder` overrides them with the 2021 (PyTorch 1.9) spelling.
    """

    OP_CAT = "cpu_op"
    STEP_CAT = "user_annotation"
    RUNTIME_CAT = "cuda_runtime"
    KERNEL_CAT = "kernel"
    EXT_ID_KEY = "External id"  # on runtime calls and GPU activities
    FLOW_CAT = "ac2g"

    def __init__(self, pid: int = 100, tid: int = 100, device: dict[str, Any] | None = V100,
                 rank: int | None = None, world_size: int | None = None) -> None:
        self.pid, self.tid = pid, tid
        self.events: list[dict[str, Any]] = []
        self.meta: dict[str, Any] = {"schemaVersion": 1}
        if device is not None:
            self.meta["deviceProperties"] = [device]
        if rank is not None:
            self.meta["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world_size or 1}
        self._corr = 1000

    def add(self, **event: Any) -> dict[str, Any]:
        self.events.append(event)
        return event

    def op(self, name: str, ts: Time, dur: Time, cat: str | None = None, tid: int | None = None,
           **args: Any) -> dict[str, Any]:
        """A host slice (cpu_op by default; use cat="user_annotation" for ProfilerStep#N)."""
        return self.add(ph="X", cat=cat or self.OP_CAT, name=name, pid=self.pid,
                        tid=tid if tid is not None else self.tid, ts=ts, dur=dur, args=dict(args))

    def step(self, n: int, ts: Time, dur: Time) -> dict[str, Any]:
        return self.op(f"ProfilerStep#{n}", ts, dur, cat=self.STEP_CAT)

    def gpu_tid(self, stream: int) -> int | str:
        """The ``tid`` of a GPU stream's lane (an int in new traces, "stream N" in 2021 ones)."""
        return stream

    def gpu(self, name: str, ts: Time, dur: Time, cat: str | None = None, stream: int = 7,
            corr: int | None = None, **args: Any) -> dict[str, Any]:
        """A GPU activity (kernel / gpu_memcpy / gpu_memset) on device 0."""
        a = {"device": 0, "stream": stream, **args}
        if corr is not None:
            a["correlation"] = corr
        return self.add(ph="X", cat=cat or self.KERNEL_CAT, name=name, pid=0, tid=self.gpu_tid(stream),
                        ts=ts, dur=dur, args=a)

    def launch_kernel(self, name: str, launch_ts: Time, launch_dur: Time, ts: Time, dur: Time,
                      runtime: str = "cudaLaunchKernel", cat: str | None = None, stream: int = 7,
                      tid: int | None = None, ext_id: int | None = None,
                      **kernel_args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """A runtime call on the host and the GPU activity it launched, linked by correlation id.

        ``ext_id`` (optional) is written as the External id of both, as Kineto does.
        """
        self._corr += 1
        rt_args: dict[str, Any] = {"correlation": self._corr}
        if ext_id is not None:
            rt_args[self.EXT_ID_KEY] = ext_id
            kernel_args = {self.EXT_ID_KEY: ext_id, **kernel_args}
        rt = self.add(ph="X", cat=self.RUNTIME_CAT, name=runtime, pid=self.pid,
                      tid=tid if tid is not None else self.tid, ts=launch_ts, dur=launch_dur, args=rt_args)
        k = self.gpu(name, ts, dur, cat=cat, stream=stream, corr=self._corr, **kernel_args)
        return rt, k

    def memory(self, ts: Time, nbytes: int, total_allocated: int, total_reserved: int, addr: int = 1,
               device_type: int = 1, tid: int | None = None, device: int = 0) -> dict[str, Any]:
        return self.add(ph="i", s="t", name="[memory]", pid=self.pid,
                        tid=tid if tid is not None else self.tid, ts=ts,
                        args={"Device Type": device_type, "Device Id": device, "Addr": addr, "Bytes": nbytes,
                              "Total Allocated": total_allocated, "Total Reserved": total_reserved})

    def counter(self, name: str, ts: Time, pid: int | None = None, **values: float) -> dict[str, Any]:
        """A counter sample (``ph: C``); each keyword is one series."""
        return self.add(ph="C", name=name, pid=self.pid if pid is None else pid, tid=0, ts=ts,
                        args=dict(values))

    def flow(self, flow_id: int, ts: Time, phase: str, cat: str | None = None, pid: int | None = None,
             tid: int | str | None = None) -> dict[str, Any]:
        """A flow endpoint (``ph`` "s" start, "f" finish, "t" step)."""
        ev: dict[str, Any] = {"ph": phase, "id": flow_id, "pid": self.pid if pid is None else pid,
                              "tid": self.tid if tid is None else tid, "ts": ts, "cat": cat or self.FLOW_CAT,
                              "name": cat or self.FLOW_CAT}
        if phase == "f":
            ev["bp"] = "e"
        return self.add(**ev)

    def thread_name(self, name: str, tid: int | None = None, pid: int | None = None) -> dict[str, Any]:
        """A ``thread_name`` metadata event."""
        return self.add(ph="M", name="thread_name", pid=self.pid if pid is None else pid,
                        tid=self.tid if tid is None else tid, ts=0, args={"name": name})

    def document(self) -> dict[str, Any]:
        doc = {**self.meta, "traceEvents": list(self.events)}
        doc.setdefault("displayTimeUnit", "ms")  # a meta["displayTimeUnit"] (e.g. "ns") wins
        return doc

    def write(self, path: Path, gz: bool = False) -> Path:
        text = dumps(self.document())
        if gz:
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        return path

    def load(self, tmp_path: Path, name: str = "trace.json") -> Trace:
        """Write to ``tmp_path/name`` and load it through the real reader (no cache)."""
        return stepscope.load(self.write(tmp_path / name), use_cache=False)


class OldTraceBuilder(TraceBuilder):
    """The 2021 (PyTorch 1.9, tb_plugin samples) schema: ``Operator`` / ``Runtime`` / ``Kernel``
    categories, ``external id`` on runtime calls and GPU activities, GPU lanes named "stream N",
    ``async`` flows, ProfilerStep#N as an ``Operator``."""

    OP_CAT = "Operator"
    STEP_CAT = "Operator"
    RUNTIME_CAT = "Runtime"
    KERNEL_CAT = "Kernel"
    EXT_ID_KEY = "external id"
    FLOW_CAT = "async"

    def gpu_tid(self, stream: int) -> int | str:
        return f"stream {stream}"


def load_ranks(builders: list[TraceBuilder], tmp_path: Path) -> Trace:
    """Write one file per rank (``worker<r>.1.pt.trace.json``, rank from each builder's
    ``distributedInfo`` or its position) into ``tmp_path/run`` and load the directory."""
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    for i, b in enumerate(builders):
        rank = b.meta.get("distributedInfo", {}).get("rank", i)
        b.write(run / f"worker{rank}.1.pt.trace.json")
    return stepscope.load(run, use_cache=False)
