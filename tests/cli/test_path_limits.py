"""Paths the system cannot take, through the CLI: a name (a component) over NAME_MAX
bytes, a path of PATH_MAX bytes or more, a lone surrogate that stands for no byte. No
policy refused them (no file operation could use them, wherever they pointed): each is
an invalid argument, exit 2, that names the operation, the limit and what to do, found
before anything runs, so nothing changes.

A literal path is found by ``capability validate`` at its FILE:LINE:COL (and by a direct
call as it is checked); a path from an input at plan time, at the arg that takes it.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import capability, check_schema, write

LONG_NAME = "n" * 300  # over any usual file system's 255 bytes for one name
LONG_PATH = "/".join(["d" * 200] * 21)  # 4220 bytes: over Linux's 4096 (PATH_MAX)


def entries(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def name_max(folder: Path) -> int:
    """The most bytes a name may have on ``folder``'s file system (255 on most)."""
    return os.pathconf(folder, "PC_NAME_MAX")


def test_a_direct_call_with_a_name_over_name_max_is_a_usage_error(cli, work: Path) -> None:
    for op, args in (
        ("write", [LONG_NAME, "text"]),
        ("append", [f"dir/{LONG_NAME}/a.txt", "text"]),
        ("mkdir", [LONG_NAME]),
        ("read", [LONG_NAME]),
        ("list", [LONG_NAME]),
        ("delete", [LONG_NAME]),  # a destroy: said before the policy refuses it
    ):
        result = cli("files", op, *args)
        assert result.code == 2, (op, result.stdout + result.stderr)
        first, hint = result.stderr.splitlines()[:2]
        assert first.startswith(f"error: files {op} cannot take "), first
        limit = name_max(work)
        assert "has a name of 300 bytes" in first, first
        assert f"over the {limit} bytes the file system takes for one name" in first
        assert "(NAME_MAX)" in first and "refused" not in result.stderr, first
        assert hint == (
            f"  hint: shorten that name to at most {limit} bytes (a character outside ASCII "
            "takes 2 to 4 of them)"
        )
        assert "Traceback" not in result.stderr
    # in JSON, with the problem's own code, as at plan time
    doc = cli("--output", "json", "files", "write", LONG_NAME, "text")
    assert (doc.code, doc.json()["error"]["code"]) == (2, "path-too-long")
    assert entries(work) == []


def test_a_direct_call_with_a_path_over_path_max_is_a_usage_error(cli, work: Path) -> None:
    result = cli("files", "write", LONG_PATH, "text")
    assert result.code == 2, result.stdout + result.stderr
    first, hint = result.stderr.splitlines()[:2]
    assert first.startswith("error: files write cannot take PATH 'dddd"), first
    assert "is 4220 bytes long, over the 4095 bytes the system takes for a path (PATH_MAX)" in first
    assert hint.startswith("  hint: use a shorter path"), hint
    doc = cli("--output", "json", "files", "read", LONG_PATH)
    assert doc.code == 2
    check_schema(doc.json(), "error")
    assert doc.json()["exit_code"] == 2 and "PATH_MAX" in doc.json()["error"]["message"]
    assert entries(work) == []


def test_the_limits_themselves_are_fine(cli, work: Path) -> None:
    limit = name_max(work)
    name = "y" * limit
    assert cli("files", "write", name, "text").code == 0
    assert (work / name).read_text() == "text\n"
    over = cli("files", "write", name + "y", "text")
    assert over.code == 2 and f"has a name of {limit + 1} bytes" in over.stderr
    # bytes, not characters: a two-byte character for each byte of the limit, and one more
    wide = cli("files", "write", "é" * (limit // 2 + 1), "text")
    size = 2 * (limit // 2 + 1)
    assert wide.code == 2 and f"has a name of {size} bytes" in wide.stderr, wide.stderr


def test_a_literal_path_is_found_by_validate_at_its_position(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - provider: files\n    args: [write, first.txt, one]\n"
            f"  - provider: files\n    args: [write, {LONG_NAME}, two]\n"
        ),
    )
    # "# Test", blank, "Prose.", blank, the fence: the block's first line is line 6
    result = cli("capability", "validate", "cap.md")
    assert result.code == 2, result.stdout + result.stderr
    assert (
        f"cap.md:11:19: error: step 2: files write cannot take PATH '{LONG_NAME[:57]}...': "
        f"it has a name of 300 bytes, over the {name_max(work)} bytes the file system takes "
        "for one name (NAME_MAX)"
    ) in result.stdout, result.stdout
    doc = cli("--output", "json", "capability", "validate", "cap.md")
    (problem,) = doc.json()["capabilities"][0]["problems"]
    assert (problem["line"], problem["column"], problem["code"]) == (11, 19, "path-too-long")
    # execute refuses the capability as invalid: its first step does not run either
    run = cli("capability", "execute", "cap.md")
    assert run.code == 2 and "nothing ran" in run.stderr, run.stderr
    assert entries(work) == ["cap.md"]


def test_a_path_from_an_input_is_found_at_plan_time(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  name:\n    required: true\nworkflow:\n"
            "  - provider: files\n    args: [mkdir, out]\n"
            "  - provider: files\n    args: [write, 'out/${name}.txt', hello]\n"
        ),
    )
    assert cli("capability", "validate", "cap.md").code == 0  # the value is not known yet
    for command in ("plan", "execute"):
        result = cli("capability", command, "cap.md", "--input", f"name={LONG_NAME}")
        assert result.code == 2, (command, result.stdout + result.stderr)
        assert (
            "cap.md:14:19: error: step 2 (files write): files write cannot take PATH "
            f"'out/{LONG_NAME[:53]}...' (from input 'name'): it has a name of 304 bytes"
        ) in result.stderr, result.stderr
        assert "(NAME_MAX)" in result.stderr and "(step 2); nothing ran" in result.stderr
    doc = cli("--output", "json", "capability", "execute", "cap.md", "--input", f"name={LONG_NAME}")
    assert doc.code == 2
    check_schema(doc.json(), "error")
    error = doc.json()["error"]
    assert error["code"] == "path-too-long" and error["hint"].startswith("shorten that name")
    assert [(p["line"], p["column"]) for p in error["problems"]] == [(14, 19)]
    assert entries(work) == ["cap.md"]  # not even step 1's folder


def test_a_path_too_long_only_from_the_working_directory(cli, work: Path) -> None:
    # a working directory of 3,900 bytes or more: a relative path of 200 more is too long
    deep = work
    while len(os.fsencode(deep)) < 3900:
        deep = deep / ("w" * 200)
    deep.mkdir(parents=True)
    assert len(os.fsencode(deep)) < 4095 <= len(os.fsencode(deep / ("f" * 200)))
    result = cli("files", "write", "f" * 200, "text", cwd=deep)
    assert result.code == 2, result.stdout + result.stderr
    assert "bytes long taken from the working directory" in result.stderr, result.stderr
    assert "(PATH_MAX)" in result.stderr
    assert "hint: run from a folder nearer the file, or use a shorter path" in result.stderr
    assert os.listdir(deep) == []


def test_a_link_to_a_name_over_the_limit(cli, work: Path) -> None:
    os.symlink("b" * 300, work / "link")
    result = cli("files", "write", "link", "text")
    assert result.code == 2, result.stdout + result.stderr
    assert "error: files write cannot take PATH 'link': it resolves to /" in result.stderr
    assert "..., which has a name of 300 bytes ('bbbb" in result.stderr, result.stderr
    assert "(NAME_MAX) (step 1); nothing ran" in result.stderr
    assert entries(work) == ["link"]


def test_a_lone_surrogate_that_is_no_byte_is_not_a_name(cli, work: Path) -> None:
    # YAML's "\ud800" makes one (a byte that is not UTF-8, "\udcff", is that byte: a name)
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  p:\n    required: true\nworkflow:\n"
            '  - provider: files\n    args: [write, "\\ud800.txt", one]\n'
            '  - provider: files\n    args: [write, "${p}\\ud800.txt", two]\n'
        ),
    )
    result = cli("capability", "validate", "cap.md")
    assert result.code == 2, result.stdout + result.stderr
    assert (
        "cap.md:12:19: error: step 1: files write cannot take PATH '\\ud800.txt': it holds "
        "'\\ud800', a lone surrogate"
    ) in result.stdout, result.stdout
    assert "cap.md:14" not in result.stdout  # known at plan time, with its input
    doc = cli("--output", "json", "capability", "validate", "cap.md")
    (problem,) = doc.json()["capabilities"][0]["problems"]
    assert problem["code"] == "path-not-a-name"
    # the same step from an input's value, at plan time (no internal error, exit 70)
    write(
        work / "one.md",
        capability(
            "version: v1\ninputs:\n  p:\n    required: true\nworkflow:\n"
            '  - provider: files\n    args: [write, "${p}\\ud800.txt", two]\n'
        ),
    )
    run = cli("capability", "execute", "one.md", "--input", "p=a")
    assert run.code == 2, run.stdout + run.stderr
    assert "(from input 'p'): it holds '\\ud800', a lone surrogate" in run.stderr
    assert "nothing ran" in run.stderr
    assert entries(work) == ["cap.md", "one.md"]
