"""The decoding pool's result pipe is enlarged so a worker hands over a chunk's tables without waiting
for the main process; where that cannot be done, nothing changes."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from stepscope.ingest import kineto

F_GETPIPE_SZ = 1032


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are a Linux feature")
def test_result_pipe_holds_a_whole_chunk() -> None:
    import fcntl

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    if limit < kineto.RESULT_PIPE_BYTES:
        pytest.skip(f"this machine caps pipes at {limit} bytes")
    pool = ProcessPoolExecutor(1, mp_context=get_context("fork"))
    try:
        writer = pool._result_queue._writer  # type: ignore[attr-defined]
        before = fcntl.fcntl(writer.fileno(), F_GETPIPE_SZ)
        kineto._roomy_result_pipe(pool)
        assert before < kineto.RESULT_PIPE_BYTES == fcntl.fcntl(writer.fileno(), F_GETPIPE_SZ)
        assert pool.submit(int, "7").result() == 7  # the pool still works
    finally:
        pool.shutdown()


def test_an_executor_without_that_pipe_is_left_alone() -> None:
    kineto._roomy_result_pipe(object())  # type: ignore[arg-type]
