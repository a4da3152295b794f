"""Every command reports a path it cannot use the one way ``analyze`` does: one line
``stepscope: error: PATH: <problem>``, exit code 2, never click's four-line usage block.

Before: ``serve /nonexistent``, ``diff X Y``, ``memory /nonexistent.pickle`` (and ``--trace``,
``--snapshot``, ``--root``, ``--config``) printed "Usage: ... Error: Invalid value for 'DIRECTORY':
Path ... does not exist."; an empty snapshot said "(Ran out of input)", and a text file named .gz
"does not start with '{'".
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.unit.ingest.helpers import CliResult, assert_one_line_error, run_in_process

MISSING = "no_such_input.json"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> CliResult:
    return run_in_process(args, capsys)


def _refused(args: list[str], path: Path, said: str, capsys: pytest.CaptureFixture[str]) -> CliResult:
    res = _run(args, capsys)
    assert "Usage:" not in res.stderr and "Try 'stepscope" not in res.stderr, res.stderr
    assert_one_line_error(res, path)
    assert said in res.stderr, res.stderr
    return res


def _calls(missing: str, real: str) -> dict[str, list[str]]:
    return {"analyze": ["analyze", missing], "advise": ["advise", missing],
            "whatif": ["whatif", missing, "--workers", "2"], "sql": ["sql", missing, "SELECT 1"],
            "export": ["export", missing, "-o", "out.json"], "report": ["report", missing, "--md"],
            "serve": ["serve", missing, "--no-browser"], "diff BASE": ["diff", missing, real],
            "diff NEW": ["diff", real, missing], "memory": ["memory", missing],
            "memory --trace": ["memory", real, "--trace", missing],
            "report --snapshot": ["report", "--snapshot", missing], "mcp --root": ["mcp", "--root", missing],
            "advise --config": ["advise", "--config", missing]}


@pytest.mark.parametrize("call", sorted(_calls("", "")))
def test_a_missing_path_is_one_line_on_every_command(call: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    missing, real = tmp_path / MISSING, tmp_path / "real.pickle"
    real.write_bytes(b"")
    _refused(_calls(str(missing), str(real))[call], missing, "no such file or directory", capsys)


@pytest.mark.parametrize("args", [["memory", "{d}"], ["advise", "--config", "{d}"], ["report", "--snapshot", "{d}"]])
def test_a_directory_where_a_file_is_wanted(args: list[str], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _refused([a.format(d=tmp_path) for a in args], tmp_path, "is a directory, not a file", capsys)


def test_a_file_where_a_directory_is_wanted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "root.txt"
    f.write_text("x")
    _refused(["mcp", "--root", str(f)], f, "is not a directory", capsys)


def test_an_empty_snapshot_says_the_file_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "snapshot.pickle"
    empty.write_bytes(b"")
    assert "Ran out of input" not in _refused(["memory", str(empty)], empty, "the file is empty", capsys).stderr


def test_a_text_file_named_gz_says_it_is_not_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "fake.json.gz"
    fake.write_text("this is plain text\n")
    _refused(["analyze", "--no-cache", str(fake)], fake, "not a gzip file", capsys)
    inner = tmp_path / "text_inside.json.gz"
    inner.write_bytes(gzip.compress(b"plain text, gzipped"))
    _refused(["analyze", "--no-cache", str(inner)], inner, "a gzip file, but what it holds is not a JSON trace", capsys)


def test_run_names_a_missing_script_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It said "no such script: PATH"; now "PATH: no such script ...", as every other missing path."""
    missing = tmp_path / "train_missing.py"
    res = _run(["run", "--out", str(tmp_path / "out"), "--", "python", str(missing)], capsys)
    assert_one_line_error(res, missing)
    assert res.stderr.startswith(f"stepscope: error: {missing}: no such script"), res.stderr
