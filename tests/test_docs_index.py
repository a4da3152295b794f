"""docs/index.md links every page; every registered analysis and every advisor rule has its page."""

from __future__ import annotations

import re
from pathlib import Path

from stepscope.advisor.rules import ALL_RULES
from stepscope.analysis.registry import CLUSTER_ANALYSES, RANK_ANALYSES

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: pages being written: linked from the index, allowed to be absent until they land (none now)
PENDING: set[str] = set()
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
#: an index table row naming an analysis: | `name` | [...](page.md) |
ROW = re.compile(r"^\|\s*`([a-z0-9_]+)`\s*\|\s*\[[^\]]*\]\(([^)#\s]+)")


def _index() -> str:
    return (DOCS / "index.md").read_text(encoding="utf-8")


def _linked() -> set[str]:
    return {m.group(1) for m in LINK.finditer(_index()) if not m.group(1).startswith(("http:", "https:"))}


def test_index_links_resolve() -> None:
    broken = sorted(t for t in _linked() if not (DOCS / t).exists() and t not in PENDING)
    assert not broken, f"docs/index.md links to missing pages: {broken}"


def test_every_page_is_linked_from_the_index() -> None:
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"index.md"}
    unlinked = sorted(pages - _linked())
    assert not unlinked, f"add these pages to docs/index.md: {unlinked}"


def test_every_registered_analysis_has_its_page() -> None:
    rows = {m.group(1): m.group(2) for line in _index().splitlines() if (m := ROW.match(line))}
    names = {a.name for a in RANK_ANALYSES} | {c.name for c in CLUSTER_ANALYSES}
    missing = sorted(n for n in names if n not in rows or not (DOCS / rows[n]).is_file())
    assert not missing, ("write docs/views/<name>.md (views) or docs/analyses/<name>.md (deep analyses) "
                         f"and list it in docs/index.md: {missing}")


def test_every_rule_has_its_page_in_the_index() -> None:
    linked = _linked()
    missing = sorted(r.RULE_ID for r in ALL_RULES if f"rules/{r.RULE_ID}.md" not in linked
                     or not (DOCS / "rules" / f"{r.RULE_ID}.md").is_file())
    assert not missing, f"write docs/rules/<id>.md and link it from docs/index.md: {missing}"


def test_readme_lists_every_command() -> None:
    import click

    from stepscope.cli import cli

    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Commands"):]
    commands = cli.list_commands(click.Context(cli))
    missing = [c for c in commands if f"`stepscope {c}" not in table]
    assert not missing, f"add a line per command to README.md's command table: {missing}"


#: a row of whatif.md's rule → remedy table: | `rule` | `remedy` | ... |
REMEDY_ROW = re.compile(r"^\|\s*`([a-z0-9-]+)`\s*\|\s*`([a-z0-9-]+)`\s*\|")
#: a rule asking for its remedy's replayed saving: replayed_saving(ctx, "remedy", ...)
REPLAYED = re.compile(r'(?:replayed_saving\(ctx,\s*|\bremedy = )"([a-z0-9-]+)"')  # the literal, or the rule's default


def test_whatif_md_names_each_rules_remedy() -> None:
    """docs/whatif.md's table of each rule's remedy is the rules' own: every rule that takes its gain from a
    replayed remedy is in it with that remedy, and every remedy named is a standard one."""
    from stepscope.analysis.whatif.remedies import REMEDIES

    text = (DOCS / "whatif.md").read_text(encoding="utf-8")
    table = {m.group(1): m.group(2) for line in text.splitlines() if (m := REMEDY_ROW.match(line))}
    rules_dir = Path(__file__).resolve().parents[1] / "stepscope" / "advisor" / "rules"
    code = {}
    for rule in ALL_RULES:
        source = (rules_dir / f"{rule.__name__.rsplit('.', 1)[1]}.py").read_text(encoding="utf-8")
        if m := REPLAYED.search(source):
            code[rule.RULE_ID] = m.group(1)
    assert code and table == code
    assert set(code.values()) <= set(REMEDIES)
