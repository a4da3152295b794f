"""The shape rules of STYLE.md §5–§6, checked on every module of the package with ``ast``.

* a module has at most 400 lines and a function at most 50 (decorators not counted);
* no per-event Python in ``stepscope/model`` and ``stepscope/analysis``: no ``iterrows`` /
  ``itertuples`` / ``.apply(`` (per-event Python inside pandas), and no ``for`` loop or
  comprehension over a column of an event table (``ev["ts_ns"]``, ``trace.events["name"].tolist()``,
  ``zip(cols[k] ...)``) or over ``range(len(<table>))``; loops over a column's distinct values
  (through ``unique`` / ``np.unique``) or a table's column *names* are fine;
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
#: names under which the code holds event-sized tables (a dict of columns, or a Table)
EVENT_TABLES = frozenset({"ev", "events", "cols", "mem", "memory", "counters", "flows"})
#: calls whose result is no longer per event (distinct values, counts, one number)
REDUCERS = frozenset({"unique", "bincount", "len", "sum", "max", "min", "any", "all", "flatnonzero"})
PRINT_ALLOWED_IN = ("cli", "report", "collect")

# "<path relative to stepscope/>" (module too long) or "<path>::<qualified function>" -> reason.
ALLOWED: dict[str, str] = {
    "analysis/timeline.py::_records": "the rows of one timeline window (at most max_items) as JSON records",
}


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


def _is_table(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in EVENT_TABLES) or (
        isinstance(node, ast.Attribute) and node.attr in EVENT_TABLES)


def _column(node: ast.AST) -> bool:
    """``ev["name"]`` / ``cols[key]``: a whole column of an event table."""
    return isinstance(node, ast.Subscript) and _is_table(node.value) and (
        isinstance(node.slice, ast.Name)
        or (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)))


def _per_event(node: ast.AST) -> bool:
    """Whether iterating ``node`` visits every event: a column (not reduced first), or ``range(len(table))``."""
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name == "range":
            return any(isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "len"
                       and a.args and (_is_table(a.args[0]) or _column(a.args[0])) for a in node.args)
        if name in REDUCERS:
            return False
    return _column(node) or any(_per_event(c) for c in ast.iter_child_nodes(node))


def _loop_violations(rel: str, tree: ast.AST) -> list[Violation]:
    if rel.split("/")[0] not in NO_PANDAS_LOOPS_IN:
        return []
    owner: dict[int, str] = {}
    for qualname, fn in _functions(tree):  # outer functions first: an inner one overwrites its own loops
        for node in ast.walk(fn):
            owner[id(node)] = qualname
    out: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            iters = [node.iter]
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            iters = [g.iter for g in node.generators]
        else:
            continue
        for it in iters:
            if _per_event(it):
                where = owner.get(id(node))
                key = f"{rel}::{where}" if where else f"{rel}:{node.lineno}"
                out.append(Violation(key, f"per-event loop over {ast.unparse(it)[:80]} (line {node.lineno})"))
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
    return out + _call_violations(rel, tree) + _loop_violations(rel, tree)


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


def test_the_loop_check_catches_per_event_loops() -> None:
    src = ("def names(trace, ev):\n"
           "    out = [trace.strings[i] for i in ev['name'].tolist()]\n"
           "    for i in range(len(ev)):\n"
           "        out.append(i)\n"
           "    for t, d in zip(trace.events['ts_ns'], trace.events['dur_ns']):\n"
           "        out.append(t + d)\n"
           "    def inner(cols, keys):\n"
           "        return [dict(zip(keys, v)) for v in zip(*(cols[k].tolist() for k in keys))]\n"
           "    return out\n"
           "def fine(ev, np):\n"
           "    for n in np.unique(ev['name']).tolist():\n"
           "        pass\n"
           "    for key in ev:\n"
           "        pass\n"
           "    return [c for c in ev.items()]\n")
    found = _loop_violations("analysis/x.py", ast.parse(src))
    assert [v.key for v in found] == ["analysis/x.py::names", "analysis/x.py::names", "analysis/x.py::names",
                                      "analysis/x.py::names.inner"]
    assert _loop_violations("report/x.py", ast.parse(src)) == []


def test_the_loop_check_finds_the_allowed_loop_in_the_package() -> None:
    """The allowed per-row loop is found (so the check runs on the real code, and would fail without the entry)."""
    path = PACKAGE / "analysis" / "timeline.py"
    found = _loop_violations("analysis/timeline.py", ast.parse(path.read_text(encoding="utf-8")))
    assert [v.key for v in found] == ["analysis/timeline.py::_records"]
