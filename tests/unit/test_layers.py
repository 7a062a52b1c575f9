"""The import contract names every engine module, so a new one cannot slip past it."""

from __future__ import annotations

import tomllib

from tests.conftest import REPO


def test_every_engine_module_is_under_the_only_the_cli_contract() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contract = next(
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"].startswith("Only the CLI")
    )
    modules = {
        f"runtime.{p.stem}"
        for p in (REPO / "runtime").glob("*.py")
        # the entry points run the CLI: `python -m runtime` and the console script
        if p.name not in ("__init__.py", "__main__.py", "console.py")
    }
    packages = {
        f"runtime.{p.parent.name}"
        for p in (REPO / "runtime").glob("*/__init__.py")
        if p.parent.name not in ("cli", "_data")
    }
    assert set(contract["source_modules"]) == modules | packages


def test_there_are_no_import_circles() -> None:
    """No module of runtime or providers imports, through any chain, a module that imports
    it back (imports inside functions and under TYPE_CHECKING count too)."""
    import grimp

    graph = grimp.build_graph("runtime", "providers", cache_dir=None)
    circles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                circles.append((module, *back))
    assert circles == [], "\n".join(" -> ".join(c) for c in circles)


def test_every_station_package_has_its_place_in_the_layers() -> None:
    """Each package of the engine is a layer of the stations' contract (the base modules,
    runtime/*.py, sit under all of them): a new package must take its place."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    packages = {
        f"runtime.{p.parent.name}"
        for p in (REPO / "runtime").glob("*/__init__.py")
        if p.parent.name != "_data"
    }
    assert set(contract["layers"]) == packages | {"runtime.pipeline"}
