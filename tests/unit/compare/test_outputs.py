"""The diff's outputs: JSON contract, CSV, XLSX (same numbers as the JSON), CLI exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stepscope.cli.diff_cmd import command
from stepscope.compare import tabular
from stepscope.compare.document import to_json
from stepscope.compare.prepare import SideSpec, diff_paths

from ._runs import write_runs

BREAKDOWN = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other"]


@pytest.fixture
def doc(tmp_path: Path) -> dict:
    b, n = write_runs(tmp_path)
    r = diff_paths(SideSpec(b), SideSpec(n), use_cache=False)
    return to_json(r, r.gate(5.0))


def test_json_contract_keys(doc: dict) -> None:
    assert doc["schema_version"] == "1"
    cats = [r["category"] for r in doc["overall"]]
    assert cats == ["step", *BREAKDOWN, "computing", "communication_not_overlapped", "free"]
    for r in doc["overall"]:
        assert {"category", "base_ms", "new_ms", "diff_ms"} <= set(r)
        assert r["diff_ms"] == pytest.approx(r["new_ms"] - r["base_ms"])
    for key in ("operators", "kernels"):
        assert doc[key] and all({"name", "base_ms", "new_ms", "diff_ms"} <= set(r) for r in doc[key])
        diffs = [abs(r["diff_ms"]) for r in doc[key]]
        assert diffs == sorted(diffs, reverse=True)
    assert doc["tables"]["kernels"]["added"] == ["relu_kernel"]
    assert doc["gate"]["passed"] is True and "reason" in doc["gate"]
    json.dumps(doc, allow_nan=False)


def test_csv_one_file_per_table(doc: dict, tmp_path: Path) -> None:
    files = tabular.write_csv(doc, tmp_path / "out")
    names = {p.stem for p in files}
    assert {"overall", "steps", "operators", "kernels", "modules", "memory", "runtime"} <= names
    with (tmp_path / "out" / "kernels.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["name"] for r in rows] == [r["name"] for r in doc["kernels"]]
    assert float(rows[0]["diff_ms"]) == pytest.approx(doc["kernels"][0]["diff_ms"])


def test_xlsx_matches_json(doc: dict, tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    path = tabular.write_xlsx(doc, tmp_path / "d.xlsx")
    wb = openpyxl.load_workbook(path)
    assert {"overall", "operators", "kernels", "runtime"} <= set(wb.sheetnames)
    ws = wb["kernels"]
    assert ws.freeze_panes == "A2"
    header = [c.value for c in ws[1]]
    got = [dict(zip(header, [c.value for c in row])) for row in ws.iter_rows(min_row=2)]
    assert [g["name"] for g in got] == [r["name"] for r in doc["kernels"]]
    assert [g["diff_ms"] for g in got] == pytest.approx([r["diff_ms"] for r in doc["kernels"]])
    diff_col = header.index("diff_ms") + 1
    removed = ws.cell(row=2, column=diff_col)  # add_kernel: faster (removed) → green
    assert removed.fill.fgColor.rgb.endswith(tabular.GOOD_FILL)
    assert ws.column_dimensions["A"].width > 8


def test_xlsx_without_openpyxl_gives_the_hint(doc: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def fake(name: str, *a: object, **k: object) -> object:
        if name == "openpyxl":
            raise ImportError(name)
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake)
    from stepscope.errors import UsageError

    with pytest.raises(UsageError, match="pip install"):
        tabular.write_xlsx(doc, tmp_path / "x.xlsx")


def test_cli_gate_exit_codes_and_outputs(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(command, [str(b), str(n), "--fail-if-slower", "5", "--no-cache", "--json",
                                 "--csv", str(tmp_path / "csv")])
    assert ok.exit_code == 0, ok.output
    doc = json.loads(ok.stdout)
    assert doc["gate"]["passed"] is True
    assert (tmp_path / "csv" / "overall.csv").exists()
    md = runner.invoke(command, [str(b), str(n), "--no-cache", "--md", "-o", str(tmp_path / "d.md")])
    assert md.exit_code == 0, md.output
    assert "dataloader" in (tmp_path / "d.md").read_text().lower()
    bad = runner.invoke(command, [str(n), str(b), "--fail-if-slower", "5", "--no-cache", "--no-findings"])
    assert bad.exit_code == 1
    assert "gate FAILED" in bad.output and "+42.9 %" in bad.output


def test_cli_terminal_output(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    res = CliRunner().invoke(command, [str(b), str(n), "--no-cache", "--no-findings", "--html",
                                       str(tmp_path / "d.html")])
    assert res.exit_code == 0, res.output
    assert "Per average step" in res.output and "DataLoader" in res.output
    assert (tmp_path / "d.html").read_text().startswith("<!")


def test_cli_bad_steps_is_usage_error(tmp_path: Path) -> None:
    b, n = write_runs(tmp_path)
    from stepscope.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["diff", str(b), str(n), "--base-steps", "9", "--no-cache"])
    assert exc.value.code == 2
