"""The flags Engineering Runtime's gh-backed ``issue list`` takes, here where it is served
over REST: ``--limit`` (issue 29), and gh's filters ``--assignee``, ``--author``,
``--mention`` and ``--milestone``; directly and in a capability, through the real CLI
against the loopback GitHub double."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import capability, write
from tests.github_double import GitHubDouble

TOKEN = "rt-er-gh-flags-token-" + "q" * 16


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:  # the caller is octocat
        double.add_org("acme")
        double.add_repo("acme", "app")
        double.add_issue("acme", "app", "Mine", assignees=["octocat"], milestone_number=2)
        double.add_issue("acme", "app", "Hubot's", assignees=["hubot"], user="hubot")
        double.add_issue("acme", "app", "Ping", body="cc @octocat", user="hubot")
        for n in range(6):
            double.add_issue("acme", "app", f"Filler {n}")
        yield double


@pytest.fixture
def genv(gh: GitHubDouble) -> dict[str, str]:
    return {**gh.runtime_env(), "RUNTIME_GITHUB_MAX_WAIT": "1"}


def titles(cli: Any, genv: dict[str, str], *args: str) -> list[str]:
    result = cli("-o", "json", "github", "issue", "list", *args, extra_env=genv)
    assert result.code == 0, result.stdout + result.stderr
    return sorted(item["title"] for item in result.json()["steps"][0]["data"])


def test_er_issue_list_limit_directly(cli: Any, gh: GitHubDouble, genv: dict[str, str]) -> None:
    result = cli("github", "issue", "list", "acme/app", "--limit", "5", extra_env=genv)
    assert result.code == 0, result.stderr
    assert len([line for line in result.stdout.splitlines() if "acme/app#" in line]) == 5


def test_gh_filters_of_a_person_and_a_milestone(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    assert titles(cli, genv, "-R", "acme/app", "--assignee", "hubot") == ["Hubot's"]
    assert titles(cli, genv, "-R", "acme/app", "-a", "@me") == ["Mine"]
    assert titles(cli, genv, "acme/app", "--author", "hubot") == ["Hubot's", "Ping"]
    assert titles(cli, genv, "acme/app", "--mention", "@me") == ["Ping"]
    assert titles(cli, genv, "acme/app", "-m", "2") == ["Mine"]
    assert titles(cli, genv, "acme/app", "--milestone", "*") == ["Mine"]
    # @me is asked of GET /user once, then sent as the login
    gh.reset_counters()
    titles(cli, genv, "acme/app", "-a", "@me", "-A", "@me")
    assert [r.path for r in gh.requests] == [
        "/user",
        "/repos/acme/app/issues?assignee=octocat&creator=octocat&per_page=100",
    ]


def test_repository_filters_are_refused_where_github_would_ignore_them(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    org = cli("github", "issue", "list", "acme", "--author", "hubot", extra_env=genv)
    assert org.code == 2
    assert (
        "creator= (--author) selects among a repository's issues; GitHub does not take it "
        "for the organization acme's issues" in org.stderr
    )
    assert "hint: name the repository: OWNER/REPO, or --repo OWNER/REPO" in org.stderr
    mine = cli("github", "issue", "list", "--assignee", "@me", extra_env=genv)
    assert mine.code == 2 and "an organization's or your own issues" in mine.stderr
    title = cli("github", "issue", "list", "acme/app", "--milestone", "v1.0", extra_env=genv)
    assert title.code == 2
    assert "milestone=v1.0 is not a milestone's number, * or none" in title.stderr
    search = cli("github", "issue", "list", "acme/app", "--search", "is:open", extra_env=genv)
    assert search.code == 2
    assert "'--search' is not a flag of 'issue list'" in search.stderr
    assert "runtime github api GET /search/issues" in search.stderr
    assert gh.requests == []


def test_the_same_flags_in_a_capability(
    cli: Any, work: Path, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    write(
        work / "triage.md",
        capability(
            "version: v1\ninputs:\n  who:\n    description: a login\n    required: true\n"
            "workflow:\n"
            "  - provider: github\n"
            '    args: [issue, list, -R, acme/app, --limit, "5"]\n'
            "  - provider: github\n"
            '    args: [issue, list, -R, acme/app, --assignee, "${who}", --json, "title"]\n'
        ),
    )
    assert cli("capability", "validate", "triage.md").code == 0
    result = cli(
        "-o", "json", "capability", "execute", "triage.md", "--input", "who=hubot", extra_env=genv
    )
    assert result.code == 0, result.stdout + result.stderr
    steps = result.json()["steps"]
    assert len(steps[0]["data"]) == 5
    assert steps[1]["data"] == [{"title": "Hubot's"}]
    # an input that makes a repository filter meet an organization is refused at plan time
    write(
        work / "org.md",
        capability(
            "version: v1\ninputs:\n  target:\n    description: where\n    required: true\n"
            "workflow:\n"
            "  - provider: github\n"
            '    args: [issue, list, "${target}", --author, hubot]\n'
        ),
    )
    refused = cli("capability", "execute", "org.md", "--input", "target=acme", extra_env=genv)
    assert refused.code == 2, refused.stderr
    assert "creator= (--author) selects among a repository's issues" in refused.stderr
