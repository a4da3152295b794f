"""A background thread that samples the system while a profile runs.

Samples become Chrome-trace counter events (``"ph": "C"``) written into the trace file itself,
so every trace viewer shows them as counter tracks and ``stepscope.load`` reads them into
``trace.counters``. One counter event per metric and sample::

    {"ph": "C", "name": "stepscope.cpu_pct", "pid": <pid>, "tid": 0, "ts": <µs>, "args": {"value": 37.5}}

=============================  ===========================================================
``stepscope.cpu_pct``          whole-machine CPU utilisation, 0-100 %
``stepscope.proc_cpu_pct``     this process (all its threads), 0-100 % × cores
``stepscope.rss_bytes``        this process's resident memory, bytes
``stepscope.disk_read_bps``    whole-machine disk read rate, bytes/s (when the OS reports it)
``stepscope.gpu<i>_util_pct``  GPU i utilisation, 0-100 % (NVML, when ``pynvml`` imports)
``stepscope.gpu<i>_mem_bytes`` GPU i memory in use, bytes (NVML)
=============================  ===========================================================

psutil is needed (the ``[torch]`` extra installs it); without it the sampler records nothing
and says so once in the log.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: prefix of every counter name stepscope writes
COUNTER_PREFIX = "stepscope."
#: samples kept between two trace exports (older ones are dropped first)
MAX_SAMPLES = 200_000


@dataclass(frozen=True)
class Sample:
    """The metrics read at one instant (``t_ns``: Unix time in ns)."""

    t_ns: int
    values: dict[str, float]


def _import_optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # an optional module may fail in many ways (missing driver ...)
        return None


class _Nvml:
    """Reads utilisation and memory of every GPU through NVML; empty when NVML is absent."""

    def __init__(self) -> None:
        self._nvml = _import_optional("pynvml")
        self._handles: list[Any] = []
        if self._nvml is None:
            return
        try:
            self._nvml.nvmlInit()
            count = self._nvml.nvmlDeviceGetCount()
            self._handles = [self._nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:  # no driver, no GPU: sample the host only
            logger.debug("NVML unavailable: %s", exc)
            self._handles = []

    def read(self, out: dict[str, float]) -> None:
        for i, handle in enumerate(self._handles):
            try:
                util = self._nvml.nvmlDeviceGetUtilizationRates(handle)
                mem = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            except Exception:  # a GPU that stops answering is skipped for this sample
                continue
            out[f"gpu{i}_util_pct"] = float(util.gpu)
            out[f"gpu{i}_mem_bytes"] = float(mem.used)

    def close(self) -> None:
        if self._handles:
            with contextlib.suppress(Exception):  # a broken NVML at shutdown is not worth an error
                self._nvml.nvmlShutdown()


class SystemSampler:
    """Samples CPU, memory, disk (and GPU via NVML) every ``interval_s`` on a daemon thread.

    ``start()`` / ``stop()`` bound the thread; :meth:`sample_now` takes one sample on the caller's
    thread; :meth:`drain` hands over the samples taken since a time and forgets older ones.
    """

    def __init__(self, interval_s: float = 0.1) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.interval_s = interval_s
        self._psutil = _import_optional("psutil")
        if self._psutil is None:
            logger.warning("psutil is not installed: no system counters (pip install psutil)")
        self._proc = self._psutil.Process() if self._psutil is not None else None
        self._nvml = _Nvml()
        self._samples: deque[Sample] = deque(maxlen=MAX_SAMPLES)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_disk: tuple[int, float] | None = None

    def start(self) -> None:
        """Start the sampling thread (the first sample primes the CPU-percent counters)."""
        if self._thread is not None:
            return
        self._read()  # psutil's first cpu_percent reading is meaningless: discard it
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="stepscope-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and release NVML."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5 * self.interval_s + 1.0)
            self._thread = None
        self._nvml.close()

    def sample_now(self) -> None:
        """Take one sample immediately (so a trace written now has a sample at its end)."""
        self._append(self._read())

    def drain(self, since_ns: int = 0) -> list[Sample]:
        """The samples taken at or after ``since_ns``; every sample held so far is forgotten."""
        with self._lock:
            out = [s for s in self._samples if s.t_ns >= since_ns]
            self._samples.clear()
        return out

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._append(self._read())

    def _append(self, sample: Sample) -> None:
        if sample.values:
            with self._lock:
                self._samples.append(sample)

    def _read(self) -> Sample:
        t_ns = time.time_ns()
        values: dict[str, float] = {}
        if self._psutil is not None and self._proc is not None:
            try:
                self._read_host(self._psutil, self._proc, values, t_ns)
            except Exception as exc:  # a transient /proc failure loses one sample, not the run
                logger.debug("system sample failed: %s", exc)
        self._nvml.read(values)
        return Sample(t_ns, values)

    def _read_host(self, ps: Any, proc: Any, out: dict[str, float], t_ns: int) -> None:
        out["cpu_pct"] = float(ps.cpu_percent(interval=None))
        out["proc_cpu_pct"] = float(proc.cpu_percent(interval=None))
        out["rss_bytes"] = float(proc.memory_info().rss)
        disk = ps.disk_io_counters() if hasattr(ps, "disk_io_counters") else None
        if disk is None:
            return
        t_s = t_ns / 1e9
        if self._last_disk is not None:
            prev_bytes, prev_t = self._last_disk
            if t_s > prev_t:
                out["disk_read_bps"] = max(0.0, (disk.read_bytes - prev_bytes) / (t_s - prev_t))
        self._last_disk = (int(disk.read_bytes), t_s)


def counter_events(samples: list[Sample], pid: int, base_ns: int) -> list[dict[str, Any]]:
    """Chrome-trace counter events for ``samples``; ``ts`` in µs after ``base_ns`` (the trace's base)."""
    events: list[dict[str, Any]] = []
    for s in samples:
        ts_us = round((s.t_ns - base_ns) / 1000.0, 3)
        for name, value in s.values.items():
            events.append({
                "ph": "C", "cat": "stepscope", "name": COUNTER_PREFIX + name,
                "pid": pid, "tid": 0, "ts": ts_us, "args": {"value": value},
            })
    return events
