"""The fork pool's result pipe is enlarged so a worker hands over a chunk's tables without waiting
for the main process; where that cannot be done, nothing changes."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from stepscope.runtime import pool as runtime_pool

F_GETPIPE_SZ = 1032


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are a Linux feature")
def test_result_pipe_holds_a_whole_chunk() -> None:
    import fcntl

    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    if limit < runtime_pool.RESULT_PIPE_BYTES:
        pytest.skip(f"this machine caps pipes at {limit} bytes")
    plain = ProcessPoolExecutor(1, mp_context=get_context("fork"))
    pool = runtime_pool.fork_pool(1, None, None)
    try:
        before = fcntl.fcntl(plain._result_queue._writer.fileno(), F_GETPIPE_SZ)  # type: ignore[attr-defined]
        after = fcntl.fcntl(pool._result_queue._writer.fileno(), F_GETPIPE_SZ)  # type: ignore[attr-defined]
        assert before < runtime_pool.RESULT_PIPE_BYTES == after
        assert pool.submit(int, "7").result() == 7  # the pool still works
    finally:
        plain.shutdown()
        pool.shutdown()


def test_an_executor_without_that_pipe_is_left_alone() -> None:
    runtime_pool.roomy_result_pipe(object())  # type: ignore[arg-type]
