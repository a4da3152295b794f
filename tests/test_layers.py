"""The package's layers, checked on every module's imports with ``ast`` (module level, inside
functions and under ``TYPE_CHECKING`` alike)::

    errors, runtime ← model ← ingest
             model ← analysis ← advisor ← report ← compare ← server ← cli
             model ← query ← mcp (also ← compare, report, ...)  mcp ← cli
                     compare, report, ... ← notebook ← stepscope/__init__
                                                            collect ← cli, stepscope/__init__

* an import goes only to a package that ``LAYERS`` lets its package use (the map is itself
  checked to be a layering: no package reaches itself through it);
* no import cycle between modules (imports under ``TYPE_CHECKING`` aside: they do not run);
* no ``_private`` module, nor a ``_private`` name, is imported from another package;
* no ``except ImportError`` around an import of the package's own modules (a module of this
  package is always there; optional *third-party* imports may be guarded);
* the advisor's rules only judge analysis results (issue 18): no rule module reaches the trace
  (``.trace``, its tables ``.events`` / ``.strings`` / ``.memory`` ...), calls a row selector
  (``rank_rows``, ``in_step_rows`` ...) or imports from ``stepscope.model`` (``model.uniq``, a numpy
  helper, aside). Evidence a rule needs is computed by an analysis, so the views show it too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "stepscope"
ROOT = "<root>"  # stepscope/__init__.py and the modules directly in stepscope/

#: package → the packages its modules may import (besides their own)
LAYERS: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "runtime": frozenset(),  # threads, the fork pool, the huge-page hint: how work runs, not what it is
    "model": frozenset({"runtime", "errors"}),
    "ingest": frozenset({"model", "runtime", "errors"}),
    "analysis": frozenset({"model", "runtime", "errors"}),  # runtime: a rank's analyses on threads (runtime.tasks)
    "query": frozenset({"model", "errors"}),
    "advisor": frozenset({"analysis", "model", "errors"}),
    # export writes the Kineto format back with the reader's category table (ingest.normalize)
    "report": frozenset({"advisor", "analysis", "ingest", "model", "errors"}),
    # compare loads its two sides (ingest), diffs their results, words the findings (report)
    "compare": frozenset({"report", "advisor", "analysis", "ingest", "model", "runtime", "errors"}),
    # map-reduce: workers (runtime's pool, Ray) read and analyse one rank each (ingest .. report), the driver reduces
    "mapreduce": frozenset({"report", "advisor", "analysis", "ingest", "model", "runtime", "errors"}),
    "collect": frozenset({"errors"}),
    # the server analyses runs of many ranks through map-reduce (summaries; one rank loaded for a view)
    "server": frozenset({"mapreduce", "compare", "report", "advisor", "analysis", "ingest", "model", "errors"}),
    # the agents' front end, a peer of server: the same document (report), diffs (compare), SQL (query)
    "mcp": frozenset({"query", "compare", "report", "advisor", "analysis", "ingest", "model", "errors"}),
    "cli": frozenset({"mcp", "server", "mapreduce", "compare", "report", "advisor", "analysis", "ingest", "model",
                      "query",
                      "collect", "runtime", "errors", ROOT}),
    # notebooks: stepscope.analyze / diff results that render themselves from the documents (report, compare)
    "notebook": frozenset({"compare", "report", "advisor", "analysis", "ingest", "model", "errors"}),
    ROOT: frozenset({"notebook", "collect", "ingest", "model", "errors"}),
    "__main__": frozenset({"cli"}),
}


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module, dotted (the longest prefix that is a module of the package)
    names: tuple[str, ...]  # names taken from it (``from target import a, b``)
    line: int
    type_only: bool


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for p in sorted(root.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def package_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return ROOT
    if len(parts) == 2 and parts[1] not in LAYERS:
        return ROOT  # stepscope/query.py and the like belong with their own entry when they have one
    return parts[1]


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            ids.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return ids


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _longest_module(name: str, known: set[str] | dict[str, Path]) -> str:
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: str, tree: ast.AST, known: set[str] | dict[str, Path], is_package: bool = False) -> list[Import]:
    """Every import of a stepscope module in ``tree``; ``from pkg import mod`` counts as importing ``pkg.mod``."""
    type_only = _type_checking_nodes(tree)
    out: list[Import] = []
    for node in ast.walk(tree):
        tc = id(node) in type_only
        if isinstance(node, ast.Import):
            out += [Import(module, _longest_module(a.name, known), (), node.lineno, tc)
                    for a in node.names if a.name.split(".")[0] == "stepscope"]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node)
            if base.split(".")[0] != "stepscope":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in known:
                    out.append(Import(module, sub, (), node.lineno, tc))
                else:
                    out.append(Import(module, _longest_module(base, known), (a.name,), node.lineno, tc))
    return out


def _all_imports() -> list[Import]:
    mods = _modules()
    out: list[Import] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        out += imports_of(name, tree, mods, path.name == "__init__.py")
    return out


# ----------------------------------------------------------------------------------------------- checks


def layer_violations(imports: list[Import]) -> list[str]:
    bad = []
    for imp in imports:
        src, dst = package_of(imp.source), package_of(imp.target)
        if src != dst and dst not in LAYERS.get(src, frozenset()):
            bad.append(f"{imp.source}:{imp.line} imports {imp.target} ({src} may not use {dst})")
    return bad


def cycles(imports: list[Import]) -> list[list[str]]:
    """Strongly connected groups of modules (more than one) in the graph of runtime imports.

    Importing ``a.b.c`` runs the ``__init__`` of ``a.b`` first: an edge to every package on the way
    that is not already one of the importer's own (those are being initialised around it)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if imp.type_only or imp.target == imp.source:
            continue
        parts = imp.target.split(".")
        own = {".".join(imp.source.split(".")[:i]) for i in range(1, imp.source.count(".") + 1)}
        for i in range(2, len(parts) + 1):
            name = ".".join(parts[:i])
            if name not in own and name != imp.source:
                graph.setdefault(imp.source, set()).add(name)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reach_ins(imports: list[Import]) -> list[str]:
    bad = []
    for imp in imports:
        if package_of(imp.source) == package_of(imp.target):
            continue
        if any(_private(p) for p in imp.target.split(".")) or any(_private(n) for n in imp.names):
            bad.append(f"{imp.source}:{imp.line} imports {imp.target} {list(imp.names) or ''}".rstrip())
    return bad


def _guards(tree: ast.AST) -> Iterator[ast.Try]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            yield node


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return False
    names = [handler.type] if not isinstance(handler.type, ast.Tuple) else list(handler.type.elts)
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names)


def own_import_guards(module: str, tree: ast.AST, known: set[str] | dict[str, Path],
                      is_package: bool = False) -> list[str]:
    bad = []
    for guard in _guards(tree):
        body = ast.Module(body=guard.body, type_ignores=[])
        for imp in imports_of(module, body, known, is_package):
            bad.append(f"{module}:{guard.lineno} guards an import of {imp.target} with except ImportError")
        for node in ast.walk(body):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "import_module" and node.args
                    and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("stepscope")):
                bad.append(f"{module}:{guard.lineno} guards import_module({node.args[0].value!r})")
    return bad


RULES = PACKAGE / "advisor" / "rules"
#: what a rule may not touch: the trace and its tables, and the selectors of a rank's rows
TRACE_ATTRS = frozenset({"trace", "events", "strings", "tracks", "memory", "counters", "flows"})
ROW_SELECTORS = frozenset({"rank_rows", "in_step_rows", "step_kernels", "step_windows", "named_rows",
                           "ancestor_with"})
MODEL_HELPERS = frozenset({"stepscope.model.uniq"})  # distinct values of an array, numpy only
#: rule module (file name) → one-line reason it must still read the trace itself (keep it empty)
RULES_READING_THE_TRACE: dict[str, str] = {}


def trace_reads(tree: ast.AST) -> list[str]:
    """Where a rule module reaches the trace instead of an analysis result."""
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in TRACE_ATTRS:
            bad.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in ROW_SELECTORS:
            bad.append(f"line {node.lineno}: {node.id}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stepscope.model") \
                and node.module not in MODEL_HELPERS:
            bad.append(f"line {node.lineno}: imports {node.module}")
        elif isinstance(node, ast.ImportFrom):
            bad += [f"line {node.lineno}: imports {a.name}" for a in node.names if a.name in ROW_SELECTORS]
    return bad


def _rule_modules() -> list[Path]:
    return sorted(p for p in RULES.glob("*.py"))


# ----------------------------------------------------------------------------------------------- tests


def test_the_package_is_found() -> None:
    mods = _modules()
    assert len(mods) > 100 and {package_of(m) for m in mods} <= set(LAYERS)


def test_the_layers_are_a_layering() -> None:
    """No package can reach itself through the allowed uses (the map is a DAG)."""

    def reach(p: str, seen: frozenset[str]) -> None:
        for q in LAYERS[p]:
            assert q not in seen, f"LAYERS has a cycle through {q}"
            reach(q, seen | {q})

    for p in LAYERS:
        reach(p, frozenset({p}))


def test_every_import_goes_down_the_layers() -> None:
    bad = layer_violations(_all_imports())
    assert not bad, "imports against the layers (tests/test_layers.py LAYERS):\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    found = cycles(_all_imports())
    assert not found, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in found)


def test_no_private_module_or_name_is_imported_from_another_package() -> None:
    bad = private_reach_ins(_all_imports())
    assert not bad, "make the helper public, or move it:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_import_error_guard_around_the_package_itself(name: str) -> None:
    mods = _modules()
    path = mods[name]
    bad = own_import_guards(name, ast.parse(path.read_text(encoding="utf-8")), mods, path.name == "__init__.py")
    assert not bad, "\n".join(bad)


def test_the_checks_catch_what_they_should() -> None:
    known = {"stepscope.model.trace", "stepscope.report.texts", "stepscope.advisor.finding",
             "stepscope.analysis._memo", "stepscope.analysis.common"}
    src = ("from stepscope.report import texts\n"
           "from stepscope.analysis._memo import per_rank\n"
           "from stepscope.analysis.common import _helper\n"
           "def f():\n    try:\n        import stepscope.model.trace\n    except ImportError:\n        pass\n")
    tree = ast.parse(src)
    imps = imports_of("stepscope.advisor.finding", tree, known)
    assert [i.target for i in imps] == ["stepscope.report.texts", "stepscope.analysis._memo",
                                        "stepscope.analysis.common", "stepscope.model.trace"]
    assert layer_violations(imps) == [
        "stepscope.advisor.finding:1 imports stepscope.report.texts (advisor may not use report)"]
    assert len(private_reach_ins(imps)) == 2
    assert own_import_guards("stepscope.advisor.finding", tree, known) == [
        "stepscope.advisor.finding:5 guards an import of stepscope.model.trace with except ImportError"]
    back = imports_of("stepscope.report.texts", ast.parse("import stepscope.advisor.finding\n"), known)
    assert cycles(imps + back) == [["stepscope.advisor.finding", "stepscope.report.texts"]]
    typed = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import stepscope.advisor.finding\n")
    assert cycles(imps + imports_of("stepscope.report.texts", typed, known)) == []
    # a package whose __init__ imports its modules closes a cycle for anyone who imports one of them
    pkg = {"stepscope.ingest.readers", "stepscope.ingest.readers.kineto", "stepscope.ingest.assemble"}
    init = imports_of("stepscope.ingest.readers", ast.parse("from stepscope.ingest.readers import kineto\n"), pkg, True)
    kin = imports_of("stepscope.ingest.readers.kineto", ast.parse("import stepscope.ingest.assemble\n"), pkg)
    asm = imports_of("stepscope.ingest.assemble", ast.parse("import stepscope.ingest.readers.kineto\n"), pkg)
    assert cycles(init + kin + asm) == [["stepscope.ingest.assemble", "stepscope.ingest.readers",
                                         "stepscope.ingest.readers.kineto"]]
    assert cycles(init + kin) == []


@pytest.mark.parametrize("path", _rule_modules(), ids=lambda p: p.name)
def test_rules_only_judge_analysis_results(path: Path) -> None:
    bad = trace_reads(ast.parse(path.read_text(encoding="utf-8")))
    if path.name in RULES_READING_THE_TRACE:
        assert bad, f"{path.name} no longer reads the trace: remove it from RULES_READING_THE_TRACE"
        return
    assert not bad, (f"{path.name} computes evidence from the trace; move it into an analysis "
                     "(docs/architecture.md §3) and read its result with ctx.result(KEY):\n" + "\n".join(bad))


def test_the_rule_check_catches_trace_reads() -> None:
    assert len(RULES_READING_THE_TRACE) <= 3 and all(r.strip() for r in RULES_READING_THE_TRACE.values())
    src = ("from stepscope.model.schema import EventKind\n"
           "from stepscope.model.uniq import unique\n"
           "from stepscope.analysis.common import rank_rows\n"
           "def detect(ctx):\n"
           "    ev = ctx.bundle.trace.events\n"
           "    rows = rank_rows(ctx.bundle.trace, ctx.rank)\n"
           "    return [ctx.steps, unique(rows), ev]\n")
    assert trace_reads(ast.parse(src)) == [
        "line 1: imports stepscope.model.schema", "line 3: imports rank_rows", "line 5: .events", "line 5: .trace",
        "line 6: rank_rows", "line 6: .trace"]
