"""``files codeowners add-owner`` through the real CLI: the owner joins the rule that
decides the pattern (the last line with it: the last match wins and owners do not add
up), never an appended line that would take paths from the rules before it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import write

Cli = Callable[..., Any]

CODEOWNERS = """# Owners of this repository
*           @acme/old-guard   # the default, overridden below
/docs/      @acme/writers
*           @acme/platform    # the default that decides
*.tf        @acme/infra @alice
"""


def add(cli: Cli, pattern: str, owner: str, cwd: Path) -> Any:
    return cli(
        "files", "codeowners", "add-owner", "--pattern", pattern, "--owner", owner,
        "--dir", ".", "--filename", "CODEOWNERS", cwd=cwd,
    )  # fmt: skip


def test_the_owner_joins_the_rule_that_decides_the_pattern(cli: Cli, work: Path) -> None:
    path = write(work / ".github" / "CODEOWNERS", CODEOWNERS)
    result = add(cli, "*", "@acme/web", work)
    assert result.code == 0, result.stderr
    assert path.read_text() == CODEOWNERS.replace(
        "*           @acme/platform    #", "*           @acme/platform @acme/web    #"
    )
    # already an owner there (handles compare case-insensitively): a match, no change
    result = add(cli, "*", "@ACME/web", work)
    assert result.code == 0, result.stderr
    assert "already as asked" in result.stdout
    assert path.read_text().count("@acme/web") == 1


def test_a_new_pattern_goes_first_where_it_takes_no_path_from_another(cli: Cli, work: Path) -> None:
    path = write(work / "CODEOWNERS", CODEOWNERS)
    result = add(cli, "/src/", "bob@example.com", work)
    assert result.code == 0, result.stderr
    lines = path.read_text().splitlines()
    assert lines[:2] == ["# Owners of this repository", "/src/ bob@example.com"]
    assert lines[2:] == CODEOWNERS.splitlines()[1:]


def test_crlf_and_a_rule_without_owners(cli: Cli, work: Path) -> None:
    path = write(work / "CODEOWNERS", "")
    path.write_bytes(b"*.md @acme/docs\r\n/vendor/\r\n")
    result = add(cli, "/vendor/", "@acme/deps", work)
    assert result.code == 0, result.stderr
    assert path.read_bytes() == b"*.md @acme/docs\r\n/vendor/ @acme/deps\r\n"


def test_an_owner_codeowners_does_not_take_is_refused(cli: Cli, work: Path) -> None:
    write(work / "CODEOWNERS", CODEOWNERS)
    result = add(cli, "*", "acme/web", work)
    assert result.code == 2
    assert "--owner 'acme/web' is not an owner CODEOWNERS takes" in result.stderr
    result = add(cli, "!*.md", "@acme/web", work)
    assert result.code == 2
    assert "is a negation, which CODEOWNERS does not support" in result.stderr
    assert (work / "CODEOWNERS").read_text() == CODEOWNERS
