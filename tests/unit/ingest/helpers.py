"""Ingest test helpers: fingerprint inputs (bytes + mtime), run the CLI in a subprocess, check its
one-line errors."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Fingerprint:
    """What must not change when stepscope reads a file: its bytes and its mtime."""

    sha256: str
    size: int
    mtime_ns: int


def fingerprint(path: Path) -> dict[str, Fingerprint]:
    """Fingerprints of a file, or of every file under a directory (by relative path)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    out = {}
    for f in files:
        st = f.stat()
        out[str(f.relative_to(path) if path.is_dir() else f.name)] = Fingerprint(
            hashlib.sha256(f.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run_in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> CliResult:
    """``stepscope ARGS`` in this process (its exit code and captured output)."""
    from stepscope.cli import main

    code = 0
    try:
        main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return CliResult(code, out, err, 0.0)


def run_cli(*args: str, cache_dir: Path, timeout: float = 60) -> CliResult:
    """``python -m stepscope ARGS`` in a fresh process (the installed console script's code path)."""
    env = dict(os.environ, STEPSCOPE_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "stepscope", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=str(cache_dir))
    return CliResult(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0)


def assert_one_line_error(res: CliResult, path: Path) -> None:
    """Exit code 2 and exactly one stderr line ``stepscope: error: <file>: <problem>``, no traceback."""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, f"exit code {res.returncode}, stderr:\n{res.stderr}"
    assert "Traceback" not in res.stderr, res.stderr
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{res.stderr}"
    assert lines[0].startswith("stepscope: error: "), lines[0]
    assert path.name in lines[0], f"the message does not name the file {path.name}: {lines[0]}"
