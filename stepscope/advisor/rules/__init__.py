"""The advisor's rules, one module each (stable kebab-case ``RULE_ID``; docs/rules/<id>.md).

Every module provides ``RULE_ID``, ``SCOPE`` (``"rank"`` or ``"cluster"``) and
``detect(ctx) -> list[Finding]``. Add a rule by writing its module and listing it here.
"""

from __future__ import annotations

from types import ModuleType

from stepscope.advisor.rules import (
    dataloader_bound,
    no_tensor_cores,
)

ALL_RULES: tuple[ModuleType, ...] = (
    dataloader_bound,
    no_tensor_cores,
)
