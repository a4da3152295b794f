"""The CLI's options mean one thing and fail in one line (issue 14)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from stepscope.cli import cli, main


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_a_bad_view_name_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _main(["analyze", "--view", "kernals", "--no-cache"], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("stepscope: error: unknown view 'kernals'")
    assert "kernels" in err  # the names it accepts


def _findings(args: list[str]) -> list[dict[str, object]]:
    res = CliRunner().invoke(cli, ["analyze", "--json", "--no-cache", *args])
    assert res.exit_code == 0, res.output
    return list(json.loads(res.output)["findings"])


def test_view_never_changes_which_findings_exist() -> None:
    everything = _findings([])
    assert everything
    for view in ("kernels", "memory", "breakdown"):
        assert _findings(["--view", view]) == everything
