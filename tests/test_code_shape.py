"""The shape rules of STYLE.md §5–§6, checked on every module of the package with ``ast``.

* a module has at most 400 lines and a function at most 50 (decorators not counted);
* no ``iterrows`` / ``itertuples`` / ``.apply(`` in ``stepscope/model`` and ``stepscope/analysis``
  (per-event Python inside pandas);
* no ``print(`` outside ``stepscope/cli``, ``stepscope/report`` and ``stepscope/collect``
  (analyses print nothing; the presentation layer owns the output).

An exception needs an entry in ``ALLOWED`` below with a one-line reason. Fix the code instead when
you can: an entry that no longer matches a violation fails the test too, so the list stays short.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stepscope"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50
NO_PANDAS_LOOPS_IN = ("model", "analysis")
PANDAS_LOOP_ATTRS = frozenset({"iterrows", "itertuples", "apply"})
PRINT_ALLOWED_IN = ("cli", "report", "collect")

# "<path relative to stepscope/>" (module too long) or "<path>::<qualified function>" -> reason.
ALLOWED: dict[str, str] = {}


@dataclass(frozen=True)
class Violation:
    key: str
    what: str


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _functions(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method with its qualified name (``Class.method``, ``outer.inner``)."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _call_violations(rel: str, tree: ast.AST) -> list[Violation]:
    area = rel.split("/")[0]
    out: list[Violation] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print" and area not in PRINT_ALLOWED_IN:
            out.append(Violation(f"{rel}:{node.lineno}", "print( outside cli/report/collect"))
        if isinstance(func, ast.Attribute) and func.attr in PANDAS_LOOP_ATTRS and area in NO_PANDAS_LOOPS_IN:
            out.append(Violation(f"{rel}:{node.lineno}", f".{func.attr}( in {area}/"))
    return out


def _violations(path: Path) -> list[Violation]:
    rel = _rel(path)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    out: list[Violation] = []
    n_lines = len(source.splitlines())
    if n_lines > MAX_MODULE_LINES:
        out.append(Violation(rel, f"module has {n_lines} lines > {MAX_MODULE_LINES}"))
    for qualname, fn in _functions(tree):
        length = (fn.end_lineno or fn.lineno) - fn.lineno + 1
        if length > MAX_FUNCTION_LINES:
            out.append(Violation(f"{rel}::{qualname}", f"function has {length} lines > {MAX_FUNCTION_LINES}"))
    return out + _call_violations(rel, tree)


def _all_violations() -> list[Violation]:
    return [v for path in _modules() for v in _violations(path)]


def test_the_package_is_found() -> None:
    assert len(_modules()) > 50


@pytest.mark.parametrize("path", _modules(), ids=_rel)
def test_module_shape(path: Path) -> None:
    bad = [f"{v.key}: {v.what}" for v in _violations(path) if v.key not in ALLOWED]
    assert not bad, "STYLE.md §5.7 / §6; split the code or add a reasoned entry to ALLOWED:\n" + "\n".join(bad)


def test_allow_list_is_short_reasoned_and_current() -> None:
    assert len(ALLOWED) <= 15, "the allow-list is for exceptions; fix code instead of growing it"
    assert all(reason.strip() and "\n" not in reason for reason in ALLOWED.values())
    live = {v.key for v in _all_violations()}
    stale = sorted(set(ALLOWED) - live)
    assert not stale, f"ALLOWED entries that no longer match a violation (remove them): {stale}"


def test_the_checker_catches_what_it_should() -> None:
    long_body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    src = f"def long_one():\n{long_body}\n\ndef short():\n    print(1)\n    df.iterrows()\n    s.apply(f)\n"
    tree = ast.parse(src)
    lengths = {name: (fn.end_lineno or 0) - fn.lineno + 1 for name, fn in _functions(tree)}
    assert lengths == {"long_one": MAX_FUNCTION_LINES + 1, "short": 4}
    whats = sorted(v.what for v in _call_violations("analysis/x.py", tree))
    assert whats == [".apply( in analysis/", ".iterrows( in analysis/", "print( outside cli/report/collect"]
    assert _call_violations("report/x.py", tree) == []
