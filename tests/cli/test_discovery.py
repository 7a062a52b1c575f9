"""Capabilities found from any folder, never shadowed by a folder (issue 29, item 3).

A name is looked up in the working folder's ``capabilities/``, or the nearest folder
above that holds one (not past a git repository's top, HOME or the root); the roots
stay the working folder, which plan names. A bare name is a name even where a folder
of that name exists; a folder is meant only when written as a path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, capability, check_schema, write

MANY = capability(
    "version: v1\nworkflow:\n  - provider: files\n    args: [mkdir, many]\n", title="Many"
)


def test_a_name_is_found_in_the_capabilities_folder_above(
    cli: Callable[..., Result], work: Path
) -> None:
    cap = write(work / "capabilities" / "many.md", MANY)
    deeper = work / "src" / "deeper"
    deeper.mkdir(parents=True)
    plan = cli("capability", "plan", "many", cwd=deeper)
    assert plan.code == 0, plan.stdout + plan.stderr
    # the capability file, and the working folder its roots and relative paths start in
    assert plan.stdout.startswith(f"plan for {cap} (sha256 ")
    assert f"working folder: {deeper} (the roots and relative paths start here)" in plan.stdout
    doc = cli("--output", "json", "capability", "plan", "many", cwd=deeper).json()
    check_schema(doc, "plan")
    assert (doc["capability"]["path"], doc["working_folder"]) == (str(cap), str(deeper))

    ran = cli("capability", "execute", "many", cwd=deeper)
    assert ran.code == 0, ran.stderr
    assert (deeper / "many").is_dir() and not (work / "many").exists()
    listed = cli("capability", "list", cwd=deeper)
    assert "many" in listed.stdout and str(work / "capabilities") in listed.stdout


def test_the_search_stops_at_a_repository_top_and_below_home(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    # HOME is tmp_path (tests/conftest.py): its capabilities/ is never looked in from below
    write(tmp_path / "capabilities" / "stray.md", MANY)
    write(work / "capabilities" / "outer.md", MANY)
    repo = work / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    inside = cli("capability", "plan", "outer", cwd=repo / "sub")
    assert inside.code == 2
    assert "no capability named 'outer'" in inside.stderr
    # where it looked: the working folder's capabilities/, and none above in the repository
    assert f"{repo / 'sub' / 'capabilities'} (does not exist" in inside.stderr
    assert "found no capabilities/ folder above the working folder (the search stops at a " in (
        inside.stderr
    )
    stray = cli("capability", "plan", "stray")
    assert stray.code == 2 and "no capability named 'stray'" in stray.stderr
    # a repository's top is searched: its capabilities/ is the project's
    write(repo / "capabilities" / "inner.md", MANY)
    assert cli("capability", "plan", "inner", cwd=repo / "sub").code == 0


def test_a_bare_name_is_the_capability_even_beside_a_folder_of_that_name(
    cli: Callable[..., Result], work: Path
) -> None:
    write(work / "capabilities" / "many.md", MANY)
    first = cli("capability", "execute", "many")
    assert first.code == 0, first.stderr
    assert (work / "many").is_dir()  # the capability made many/
    again = cli("capability", "execute", "many")
    assert again.code == 0, again.stderr
    assert "is a folder" not in again.stderr
    assert cli("capability", "plan", "many").code == 0
    validated = cli("capability", "validate", "many")
    assert validated.code == 0 and "1 checked" in validated.stdout


def test_a_folder_written_as_a_path_names_the_capability_it_may_mean(
    cli: Callable[..., Result], work: Path
) -> None:
    write(work / "capabilities" / "many.md", MANY)
    (work / "many").mkdir()
    for written in ("./many", "many/"):
        result = cli("capability", "execute", written)
        assert result.code == 2
        assert f"error: {written} is a folder; name one capability file" in result.stderr
        assert (
            "did you mean the capability 'many' (capabilities/many.md)? Name it without a "
            "path: `many`" in result.stderr
        )
    (work / "other").mkdir()
    plain = cli("capability", "execute", "other/")
    assert plain.code == 2 and "did you mean" not in plain.stderr
