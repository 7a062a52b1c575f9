"""FolderResolver against os.path.realpath: the same answer for every path.

A tree with folders, files, symbolic links to each (relative and absolute),
dangling links, a link loop and a link that climbs out with ``..`` is built
once; paths over it are generated with ``.``, ``..``, doubled and trailing
slashes, missing names and links at every position. One resolver answers
them all, as one resolver answers every path of a run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from providers.files.confine import FolderResolver, confine

NAMES = [
    "a",
    "b",
    "f.txt",
    "missing",
    "to_a",
    "to_b_abs",
    "to_file",
    "dangling",
    "loop1",
    "up",
    ".",
    "..",
    "",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("resolver")
    root = top / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "f.txt").write_text("x")
    (root / "f.txt").write_text("y")
    for folder in (root, root / "a", root / "a" / "b", root / "b"):
        (folder / "to_a").symlink_to("a" if folder == root else "../a")
        (folder / "to_b_abs").symlink_to(root / "a" / "b")
        (folder / "to_file").symlink_to(root / "f.txt")
        (folder / "dangling").symlink_to("nowhere/at/all")
        (folder / "loop1").symlink_to("loop2")
        (folder / "loop2").symlink_to("loop1")
        (folder / "up").symlink_to("../..")
    return root


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(NAMES), min_size=1, max_size=6), trailing=st.booleans())
@example(parts=["loop1", "", "a"], trailing=False)  # realpath stops at the loop: "/a"
def test_the_resolver_answers_as_realpath_does(
    tree: Path, parts: list[str], trailing: bool
) -> None:
    # joined by hand: an empty part makes a doubled slash
    path = str(tree) + "/" + "/".join(parts) + ("/" if trailing else "")
    resolve = _shared(tree)
    assert resolve(path) == os.path.realpath(path)
    # and a second time, from the folders it has cached
    assert resolve(path) == os.path.realpath(path)


_RESOLVERS: dict[Path, FolderResolver] = {}


def _shared(tree: Path) -> FolderResolver:
    return _RESOLVERS.setdefault(tree, FolderResolver())


@pytest.mark.parametrize(
    "given",
    ["a/f.txt", "to_a/f.txt", "a/to_file", "a/b/up/f.txt", "a/dangling", "a/loop1", "b/../a/x"],
)
def test_confine_with_the_resolver_confines_as_with_realpath(tree: Path, given: str) -> None:
    def outcome(resolve: object) -> object:
        try:
            return confine(
                given, [tree], tree, "write", **({"resolve": resolve} if resolve else {})
            )
        except Exception as exc:  # the refusal itself is compared
            return (type(exc).__name__, str(exc))

    assert outcome(FolderResolver()) == outcome(None)
