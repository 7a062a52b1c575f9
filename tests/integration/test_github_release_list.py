"""`github release list`: the worked example of an operation that is only a declaration.

Its declaration (``providers/github/__init__.py``) names its route, its arguments' types,
the generic REST list handler and the columns text mode shows; no code of its own. Run
through the real CLI against the GitHub double, which serves the route.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from providers.github import OPERATIONS
from tests.conftest import Result, capability, check_schema, write
from tests.github_double import GitHubDouble

TOKEN = "ghp_" + "R3l3ase" * 5 + "x"
RELEASES = 7


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")
        double.add_repo("acme", "app")
        start = datetime(2024, 1, 1, tzinfo=UTC)
        for n in range(1, RELEASES + 1):
            when = start + timedelta(days=n)
            double.add_release(
                "acme", "app", f"v1.{n}.0", name=f"One {n}", created_at=when, published_at=when
            )
        double.reset_counters()
        yield double


def github(cli: Callable[..., Result], gh: GitHubDouble, *args: str) -> Result:
    result = cli(*args, extra_env=gh.runtime_env())
    assert TOKEN not in result.stdout + result.stderr
    return result


def listed(cli: Callable[..., Result], gh: GitHubDouble, *args: str) -> dict[str, Any]:
    result = github(cli, gh, "--output", "json", "github", "release", "list", *args)
    assert result.code == 0, result.stdout + result.stderr
    doc: dict[str, Any] = result.json()
    check_schema(doc, "execute")
    return doc


def pages(gh: GitHubDouble) -> list[str]:
    return [f"{r.method} {r.path}" for r in gh.requests]


def test_it_is_declared_with_its_route_and_the_generic_list_handler() -> None:
    (op,) = [op for op in OPERATIONS if op.name == "release list"]
    assert (op.transport, op.effect) == ("rest", "read")
    assert op.rest_routes == (("GET", "/repos/{owner}/{repo}/releases"),)
    assert op.handler == "providers.github.ops:rest_list"


def test_release_list_follows_every_page(cli: Callable[..., Result], gh: GitHubDouble) -> None:
    doc = listed(cli, gh, "acme/app", "per_page=3")
    step = doc["steps"][0]
    assert [r["tag_name"] for r in step["data"]] == [f"v1.{n}.0" for n in range(7, 0, -1)]
    assert pages(gh) == [
        "GET /repos/acme/app/releases?per_page=3",
        "GET /repos/acme/app/releases?per_page=3&page=2",
        "GET /repos/acme/app/releases?per_page=3&page=3",
    ]
    assert step["effect"] == "read" and step["http_status"] == 200


def test_release_list_stops_at_its_limit(cli: Callable[..., Result], gh: GitHubDouble) -> None:
    doc = listed(cli, gh, "acme/app", "per_page=2", "limit=3")
    assert [r["tag_name"] for r in doc["steps"][0]["data"]] == ["v1.7.0", "v1.6.0", "v1.5.0"]
    assert len(gh.requests) == 2  # the second page holds the third release


def test_release_list_prints_its_declared_columns(
    cli: Callable[..., Result], gh: GitHubDouble
) -> None:
    result = github(cli, gh, "github", "release", "list", "acme/app")
    assert result.code == 0, result.stdout + result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    header = next(line for line in lines if line.startswith("TAG"))
    assert header.split() == ["TAG", "NAME", "PUBLISHED"]
    assert any(line.split()[:3] == ["v1.7.0", "One", "7"] for line in lines)
    assert "(7 items)" in result.stdout
    assert pages(gh) == ["GET /repos/acme/app/releases?per_page=100"]


def test_its_argument_types_come_from_the_declaration(
    cli: Callable[..., Result], gh: GitHubDouble, work: Path
) -> None:
    """per_page is 1..100: a literal is refused by validate, a value from an input at plan
    time; a repository that is not OWNER/REPO never becomes a route."""
    typed = github(cli, gh, "github", "release", "list", "acme/app", "per_page=500")
    assert typed.code == 2
    assert "per_page=500 is out of range (it must be from 1 to 100)" in typed.stderr
    body = (
        "version: v1\ninputs:\n  n:\n    required: true\nworkflow:\n"
        '  - provider: github\n    args: [release, list, acme/app, "per_page=${n}"]\n'
    )
    path = write(work / "releases.md", capability(body))
    column = path.read_text().splitlines()[11].index('"per_page=${n}"') + 1
    planned = github(
        cli, gh, "--output", "json", "capability", "plan", "releases.md", "--input", "n=0"
    )
    assert planned.code == 2
    (problem,) = planned.json()["error"]["problems"]
    assert (problem["line"], problem["column"], problem["code"]) == (12, column, "bad-value")
    assert "per_page=0 (from input 'n') is out of range" in problem["message"]
    literal = write(work / "literal.md", capability(body.replace("${n}", "0")))
    checked = github(cli, gh, "capability", "validate", str(literal))
    assert checked.code == 2
    assert f"literal.md:12:{column}: error: step 1: per_page=0 is out of range" in checked.stdout
    bad_repo = github(cli, gh, "github", "release", "list", "acme")
    assert bad_repo.code == 2 and "'acme' is not OWNER/REPO" in bad_repo.stderr
    assert gh.requests == []


def test_help_lists_it_with_its_types(cli: Callable[..., Result], gh: GitHubDouble) -> None:
    shown = github(cli, gh, "github", "--help").stdout
    assert "release list OWNER/REPO [OPTION=value...]" in shown
    assert "release list: per_page=1..100, limit=1.." in shown


def test_a_long_cell_is_cut_with_an_ellipsis_and_kept_whole_in_json(
    cli: Callable[..., Result], gh: GitHubDouble
) -> None:
    name = "A release whose name goes on " + "and on " * 12 + "to the end"
    gh.add_release("acme", "app", "v9.0.0", name=name)
    result = github(cli, gh, "github", "release", "list", "acme/app")
    assert result.code == 0, result.stdout + result.stderr
    row = next(line for line in result.stdout.splitlines() if "v9.0.0" in line)
    assert f"{name[:67]}..." in row, row
    doc = listed(cli, gh, "acme/app")
    assert name in [r["name"] for r in doc["steps"][0]["data"]]
