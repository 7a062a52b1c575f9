"""The provider interface's names are the ones ARCHITECTURE.md lists, and no others."""

from __future__ import annotations

import re
import types

import runtime.provider as interface
from tests.conftest import REPO


def listed() -> list[str]:
    """The names of ARCHITECTURE.md's provider-interface list, in order: the backquoted
    names each item starts with, before its colon."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("<!-- BEGIN provider-interface -->", 1)[1]
    block = block.split("<!-- END provider-interface -->", 1)[0]
    items = [line[2:] for line in block.splitlines() if line.startswith("- ")]
    assert items, "the provider-interface list in ARCHITECTURE.md is empty"
    return [name for item in items for name in re.findall(r"`(\w+)`", item.partition(":")[0])]


def test_the_interface_hands_over_the_names_architecture_lists() -> None:
    names = listed()
    assert len(names) == len(set(names)), "a name is listed twice"
    assert sorted(interface.__all__) == sorted(names)  # __all__ is kept sorted (ruff)


def test_every_public_name_of_the_interface_is_listed() -> None:
    """Nothing public is reachable from ``runtime.provider`` but ``__all__`` and its
    submodules (a re-export would be a name a provider could come to rely on)."""
    public = {
        name
        for name, value in vars(interface).items()
        if not name.startswith("_")
        and name != "annotations"
        and not isinstance(value, types.ModuleType)
    }
    assert public == set(interface.__all__)
