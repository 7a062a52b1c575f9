"""Each step is bound once: the stations after it receive the bound call.

A capability's steps are bound by validation, a typed command's as it is built; plan,
policy, the provider's ``check`` and execution all use that one binding. The test counts
calls of the binding engine over whole runs through the CLI (in process).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.plan import binding
from tests.conftest import Result, capability, write


@pytest.fixture
def binds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every call of ``runtime.plan.binding.bind``, wherever a module holds it (the stations
    are imported first, so that each holds the engine's own function to be counted)."""

    calls: list[str] = []
    original = binding.bind

    def counted(operation, args):  # type: ignore[no-untyped-def]
        calls.append(operation.name)
        return original(operation, args)

    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("runtime") and getattr(module, "bind", None) is original:
            monkeypatch.setattr(module, "bind", counted)
    yield calls


def test_a_capability_binds_each_step_once(
    cli: Callable[..., Result], work: Path, binds: list[str]
) -> None:
    body = (
        "version: v1\ninputs:\n  text:\n    required: true\nworkflow:\n"
        '  - provider: files\n    args: [write, a.txt, "${text}"]\n'
        "  - provider: files\n    args: [read, a.txt]\n"
    )
    write(work / "cap.md", capability(body))
    result = cli("capability", "execute", "cap.md", "--input", "text=hi")
    assert result.code == 0, result.stdout + result.stderr
    assert binds == ["write", "read"]


def test_a_typed_command_is_bound_once(
    cli: Callable[..., Result], work: Path, binds: list[str]
) -> None:
    write(work / "a.txt", "hello\n")
    result = cli("files", "read", "a.txt")
    assert result.code == 0, result.stdout + result.stderr
    assert binds == ["read"], binds
