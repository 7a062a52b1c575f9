"""runtime.home.entrypoints against importlib.metadata, the reader it stands in for.

The hand-written reader stays on its measured cost (ARCHITECTURE.md,
"Measured choices"); it must find what importlib.metadata finds: the same names, modules and
attributes, the first distribution on ``sys.path`` winning.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.home import entrypoints

GROUPS = ("runtime.providers", "console_scripts", "pytest11", "no.such.group")


def hand(group: str) -> dict[str, tuple[str, str]]:
    entrypoints.entry_points.cache_clear()
    found = {}
    for ep in entrypoints.entry_points(group):
        module, _, attr = ep.value.partition(":")
        found[ep.name] = (module.strip(), attr.strip())
    return found


def reference(group: str) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for ep in importlib.metadata.entry_points(group=group):
        found.setdefault(ep.name, (ep.module, ep.attr or ""))
    return found


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Two folders that are all of ``sys.path`` (the reader's cache cleared around it)."""
    folders = [tmp_path / "first", tmp_path / "second"]
    for folder in folders:
        folder.mkdir()
    monkeypatch.setattr(sys, "path", [str(f) for f in folders])
    entrypoints.entry_points.cache_clear()
    yield folders
    entrypoints.entry_points.cache_clear()


def dist(folder: Path, name: str, entry_points: str | None, *, egg: bool = False) -> None:
    info = folder / (f"{name}-py3.11.egg-info" if egg else f"{name}.dist-info")
    info.mkdir()
    project = name.rsplit("-", 1)[0]
    (info / ("PKG-INFO" if egg else "METADATA")).write_text(
        f"Metadata-Version: 2.1\nName: {project}\nVersion: {name.rsplit('-', 1)[1]}\n"
    )
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)


@pytest.mark.parametrize("group", GROUPS)
def test_the_installed_distributions_read_alike(group: str) -> None:
    assert hand(group) == reference(group)


def test_the_runtime_providers_are_found() -> None:
    assert {"files", "github"} <= set(hand("runtime.providers"))


def test_synthetic_distributions_read_alike(path: list[Path]) -> None:
    first, second = path
    dist(
        first,
        "alpha_pkg-1.0",
        "# a comment\n; another\n[runtime.providers]\n"
        "  spaced = alpha.mod : THING  \n"
        "extra = alpha.extra:Obj.attr [fancy, other]\n"
        "module_only = alpha.plain\n"
        "\n[console_scripts]\nalpha = alpha.cli:main\n",
    )
    dist(first, "beta-2.0", "[other.group]\nx = beta:x\n")
    dist(first, "gamma-0.1", None)  # no entry points at all
    dist(first, "delta-3.0", "[runtime.providers]\ndelta = delta:PROVIDER\n", egg=True)
    # The same distribution again further down sys.path: shadowed, as importlib.metadata does.
    dist(second, "alpha_pkg-0.9", "[runtime.providers]\nshadowed = old.alpha:X\n")
    dist(first, "zope.iface-1.0", "[runtime.providers]\nzope = zope.iface:P\n")
    dist(second, "Zope_Iface-0.9", "[runtime.providers]\nzope_old = zope.old:P\n")  # same project
    # Another distribution on the later path entry: read.
    dist(second, "epsilon-1.0", "[runtime.providers]\nepsilon = eps:P\n")
    for group in ("runtime.providers", "console_scripts", "other.group", "missing"):
        assert hand(group) == reference(group), group
    assert set(hand("runtime.providers")) == {
        "spaced",
        "extra",
        "module_only",
        "delta",
        "zope",
        "epsilon",
    }


def test_a_name_registered_twice_keeps_the_first_path_entry(path: list[Path]) -> None:
    first, second = path
    dist(first, "one-1.0", "[runtime.providers]\nfiles = one:P\n")
    dist(second, "two-1.0", "[runtime.providers]\nfiles = two:P\n")
    assert hand("runtime.providers") == reference("runtime.providers") == {"files": ("one", "P")}


def test_load_imports_the_object(path: list[Path]) -> None:
    first, _ = path
    dist(first, "json_ep-1.0", "[g]\ndumps = json:dumps\ndecoder = json.decoder:JSONDecoder\n")
    loaded = {ep.name: ep.load() for ep in entrypoints.entry_points("g")}
    expected = {ep.name: ep.load() for ep in importlib.metadata.entry_points(group="g")}
    assert loaded == expected
