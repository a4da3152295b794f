"""The check every ``expected.json`` case of the GPU captures is held to (``tests/data/h200_bounds``,
``tests/data/h200_models``): the verdict's bound, the rules one of which must come first, the rules
that must or must not be found, the change a rule must advise, and prose with no missing value."""

from __future__ import annotations

from typing import Any

from stepscope.advisor.engine import Advice
from stepscope.report import texts


def check_case(adv: Advice, case: dict[str, Any]) -> None:
    assert adv.verdicts[0].bound == case["bound"], texts.verdict_text(adv.verdicts[0])
    rules = [f.rule for f in adv.findings]
    if case["top"]:
        assert rules and rules[0] in case["top"], rules
    else:  # nothing worth doing first: no finding of medium or high severity
        assert all(f.severity == "low" for f in adv.findings), [(f.rule, f.severity) for f in adv.findings]
    assert set(case["require"]) <= set(rules), rules
    assert not set(case["must_not"]) & set(rules), rules
    for rule, key in case.get("changes", {}).items():
        assert [f.change.key for f in adv.findings if f.rule == rule] == [key], rule
    for f in adv.findings:  # prose: no "?" where a value was missing
        text = " ".join((texts.title_text(f), texts.found_text(f), texts.change_text(f), texts.basis_text(f)))
        assert "?" not in text, (f.rule, text)
