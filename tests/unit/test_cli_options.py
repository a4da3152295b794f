"""The CLI's options mean one thing and fail in one line (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

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


@pytest.mark.parametrize("cmd", ["analyze", "report"])
def test_md_with_output_writes_markdown_to_the_file(cmd: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``report PATH --md -o FILE`` wrote the HTML page to FILE and printed the Markdown; --md means
    "the Markdown summary, to -o FILE else stdout" on analyze, report and diff alike."""
    out = tmp_path / "summary.md"
    rc, stdout, err = _main([cmd, "--md", "-o", str(out), "--no-cache"], capsys)
    assert rc == 0, err
    text = out.read_text(encoding="utf-8")
    assert text.startswith("### ") and "<html" not in text.lower()
    assert stdout == "" and f"wrote {out}" in err
    rc, printed, err = _main([cmd, "--md", "--no-cache"], capsys)
    assert rc == 0 and printed.rstrip("\n") == text.rstrip("\n"), err


def test_report_to_a_md_file_writes_the_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``report -o FILE.md`` writes the Markdown summary (it wrote the HTML page into a .md file); another
    name still gets the page."""
    out, page = tmp_path / "summary.md", tmp_path / "page.html"
    rc, _, err = _main(["report", "-o", str(out), "--no-cache"], capsys)
    assert rc == 0, err
    rc, printed, err = _main(["report", "--md", "--no-cache"], capsys)
    assert rc == 0 and out.read_text(encoding="utf-8").rstrip("\n") == printed.rstrip("\n"), err
    assert _main(["report", "-o", str(page), "--no-cache"], capsys)[0] == 0
    assert page.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")


def test_diff_md_flag_means_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stepscope.ingest import DEFAULT_TRACE

    out = tmp_path / "diff.md"
    rc, stdout, err = _main(["diff", str(DEFAULT_TRACE), str(DEFAULT_TRACE), "--no-findings", "--no-cache", "--md",
                             "-o", str(out)], capsys)
    assert rc == 0, err
    assert out.read_text(encoding="utf-8").startswith("### ") and stdout == ""


def test_output_needs_a_document_format(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _out, err = _main(["analyze", "-o", "x.txt", "--no-cache"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "--md or --json" in err


def test_every_command_has_a_whole_one_line_help_in_the_command_list() -> None:
    """``stepscope --help`` listed ``run`` as "Run CMD (e.g." (click cuts its short help at the first
    period) and the others cut with "...": each command now has a short help that fits the list."""
    import click

    res = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    assert res.exit_code == 0, res.output
    listed = res.output[res.output.index("Commands:"):].splitlines()[1:]
    names = cli.list_commands(click.Context(cli))
    assert [line.split()[0] for line in listed if line.strip()] == names
    for line in listed:
        assert not line.rstrip().endswith(("...", "e.g.", "(e.g")), line
        assert line.rstrip().endswith((".", ")", "py")), line
    for name in names:
        cmd = cli.get_command(click.Context(cli), name)
        assert cmd is not None and cmd.short_help, f"{name}: no short_help"
        assert len(cmd.short_help) <= 62, f"{name}: short help too long for an 80-column list"


def test_sql_help_is_plain_text_and_points_to_the_named_view(capsys: pytest.CaptureFixture[str]) -> None:
    """``sql --help`` showed reST markup (````ev````) literally, and ``SELECT name FROM events`` gave
    int32 ids without a word about where the names are."""
    res = CliRunner().invoke(cli, ["sql", "--help"], terminal_width=120)
    assert res.exit_code == 0 and "``" not in res.output
    assert "view ev" in res.output and "name_str" in res.output
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    sql_row = next(line for line in readme.splitlines() if line.startswith('| `stepscope sql'))
    assert "`ev`" in sql_row and "name_str" in sql_row
    from stepscope.ingest import DEFAULT_TRACE

    rc, out, err = _main(["sql", "--no-cache", "--csv", str(DEFAULT_TRACE), "SELECT name FROM events LIMIT 1"], capsys)
    assert rc == 0 and out.splitlines()[0] == "name", err
    assert "view ev" in err and "name_str" in err
    rc, out, err = _main(["sql", "--no-cache", "--csv", str(DEFAULT_TRACE), "SELECT name_str FROM ev LIMIT 1"], capsys)
    assert rc == 0 and err == "" and out.splitlines()[0] == "name_str"
