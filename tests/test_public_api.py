"""The public API (httpx idea): ``stepscope.__all__`` is sorted, unique, and every name in it exists."""

from __future__ import annotations

import stepscope


def test_all_is_sorted_and_unique() -> None:
    assert stepscope.__all__ == sorted(stepscope.__all__)
    assert len(set(stepscope.__all__)) == len(stepscope.__all__)


def test_every_name_in_all_exists() -> None:
    missing = [name for name in stepscope.__all__ if not hasattr(stepscope, name)]
    assert not missing


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from stepscope import *", namespace)
    exported = {name for name in namespace if name != "__builtins__"}
    assert exported == set(stepscope.__all__)


def test_public_names_of_the_package_are_listed() -> None:
    """A public re-export that is not a submodule must be in ``__all__`` (or renamed with ``_``)."""
    import types

    public = {
        name for name, value in vars(stepscope).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType) and name != "annotations"
    }
    assert public <= set(stepscope.__all__)
