"""GitHub operations that behave as a gh user expects (issue 29, item 6), through the real
CLI against the loopback GitHub double:

- `issue list` takes OWNER/REPO as well as an organization, lists the open issues of its
  target (an organization's: all of them, not only the caller's), and never a pull request;
- the operations served over REST take gh's common flags too (`--limit`, `--state`,
  `--json FIELDS`, `-R`), declared, in help, and bound as their key=value options are;
- a context's github_host that overrides GITHUB_API_URL says so on stderr;
- preflight counts 127.0.0.1 as local, whichever rule allows it;
- a token GitHub rejects during a step is exit 4, as at login.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import capability, check_schema, write
from tests.github_double import GitHubDouble

TOKEN = "rt-like-gh-token-" + "k" * 20


@pytest.fixture
def gh() -> Iterator[GitHubDouble]:
    with GitHubDouble(token=TOKEN) as double:
        double.add_org("acme")  # the caller (octocat) is a member
        double.add_repo("acme", "app")
        double.add_repo("acme", "lib")
        double.add_issue("acme", "app", "Crash on start", assignees=["hubot"], labels=["bug"])
        double.add_pull("acme", "app", "Fix the crash", head="fix")
        double.add_issue("acme", "app", "Docs are stale")
        double.add_issue("acme", "app", "Old one", state="closed")
        double.add_pull("acme", "lib", "Refactor", head="refactor")
        double.add_issue("acme", "lib", "Slow import", labels=["perf"])
        yield double


@pytest.fixture
def genv(gh: GitHubDouble) -> dict[str, str]:
    return {**gh.runtime_env(), "RUNTIME_GITHUB_MAX_WAIT": "1"}


def run(cli: Any, genv: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    result = cli("--output", "json", "github", *args, extra_env=genv)
    assert TOKEN not in result.stdout + result.stderr
    doc: dict[str, Any] = result.json()
    if "steps" in doc:
        check_schema(doc, "execute")
    return result.code, doc


def titles(doc: dict[str, Any]) -> list[str]:
    return sorted(item["title"] for item in doc["steps"][0]["data"])


def sent(gh: GitHubDouble) -> list[str]:
    return [r.path for r in gh.requests]


# -- issue list: its target's open issues, never a pull request -------------------------------


def test_issue_list_of_an_organization_is_its_open_issues_not_only_the_callers(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    code, doc = run(cli, genv, "issue", "list", "acme")
    assert code == 0, doc
    # every open issue of its repositories, whoever they are assigned to; no pull request
    assert titles(doc) == ["Crash on start", "Docs are stale", "Slow import"]
    assert sent(gh) == ["/orgs/acme/issues?filter=all&per_page=100"]
    text = cli("github", "issue", "list", "acme", extra_env=genv)
    assert text.code == 0
    assert "acme/app#1" in text.stdout and "acme/lib#2" in text.stdout
    assert "Fix the crash" not in text.stdout and "Refactor" not in text.stdout
    assert "(3 items)" in text.stdout
    # GitHub's filter is still there for who asks: only those assigned to the caller
    code, doc = run(cli, genv, "issue", "list", "acme", "filter=assigned")
    assert code == 0 and doc["steps"][0]["data"] == []


def test_issue_list_takes_a_repository_as_gh_does(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    for target in (["acme/app"], ["--repo", "acme/app"], ["-R", "acme/app"], ["--repo=acme/app"]):
        gh.reset_counters()
        code, doc = run(cli, genv, "issue", "list", *target)
        assert code == 0, (target, doc)
        assert titles(doc) == ["Crash on start", "Docs are stale"], target
        assert sent(gh) == ["/repos/acme/app/issues?per_page=100"], target
    # GitHub answers this route with the pull requests too, marked by pull_request
    answer = httpx.get(
        f"{gh.api_url}/repos/acme/app/issues", headers={"Authorization": f"token {TOKEN}"}
    )
    assert any("pull_request" in item for item in answer.json()), answer.text
    text = cli("github", "issue", "list", "acme/app", extra_env=genv)
    assert "acme/app#1" in text.stdout and "Fix the crash" not in text.stdout
    # a repository and a flag for one: which is meant is not written anywhere
    twice = cli("github", "issue", "list", "acme/app", "-R", "acme/lib", extra_env=genv)
    assert twice.code == 2 and "given twice" in twice.stderr
    # filter= is an organization's parameter: with a repository GitHub would ignore it
    refused = cli("github", "issue", "list", "acme/app", "filter=assigned", extra_env=genv)
    assert refused.code == 2
    assert "filter= selects among an organization's or your own issues" in refused.stderr


def test_a_limit_counts_issues_not_the_pull_requests_left_out(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    for n in range(6):
        gh.add_pull("acme", "app", f"PR {n}", head=f"b{n}")
    code, doc = run(cli, genv, "issue", "list", "acme/app", "per_page=2", "--limit", "2")
    assert code == 0, doc
    assert [i["title"] for i in doc["steps"][0]["data"]] == ["Docs are stale", "Crash on start"]


# -- gh's flags on the operations served over REST -------------------------------------------


def test_repo_view_json_fields_as_gh_gives_them(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    text = cli("github", "repo", "view", "acme/app", "--json", "name,url", extra_env=genv)
    assert text.code == 0, text.stderr
    page = f"{gh.base_url}/acme/app"  # gh's url: the page a person opens, not the API's
    assert json.loads(text.stdout) == {"name": "app", "url": page}
    code, doc = run(cli, genv, "repo", "view", "acme/app", "--json=nameWithOwner,visibility")
    assert code == 0
    assert doc["steps"][0]["data"] == {"nameWithOwner": "acme/app", "visibility": "PUBLIC"}
    # a field REST does not give is refused before anything runs, the fields listed
    gh.reset_counters()
    unknown = cli("github", "repo", "view", "acme/app", "--json", "name,languages", extra_env=genv)
    assert unknown.code == 2
    assert "json=name,languages names languages, which is not among" in unknown.stderr
    assert "nameWithOwner" in unknown.stderr
    assert gh.requests == []


def test_issue_list_takes_gh_flags_and_gives_gh_fields(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    code, doc = run(
        cli, genv, "issue", "list", "-R", "acme/app", "--state", "all", "-L", "5", "--json",
        "number,state,closed,author,labels,url",
    )  # fmt: skip
    assert code == 0, doc
    data = doc["steps"][0]["data"]
    assert [(i["number"], i["state"], i["closed"]) for i in data] == [
        (4, "CLOSED", True),
        (3, "OPEN", False),
        (1, "OPEN", False),
    ]
    assert data[2]["author"]["login"] == "octocat"
    assert [label["name"] for label in data[2]["labels"]] == ["bug"]
    assert data[2]["url"] == f"{gh.base_url}/acme/app/issues/1"
    assert list(data[0]) == sorted(data[0])  # gh's keys, as its JSON has them
    assert sent(gh) == ["/repos/acme/app/issues?state=all&per_page=100"]
    code, doc = run(cli, genv, "issue", "list", "acme", "-l", "perf", "--json", "repository")
    assert doc["steps"][0]["data"] == [{"repository": {"name": "lib", "nameWithOwner": "acme/lib"}}]
    # a flag gives its option once: two of them, or a flag and key=value, are refused
    twice = cli("github", "issue", "list", "--limit", "1", "limit=2", extra_env=genv)
    assert twice.code == 2 and "option 'limit' is given twice" in twice.stderr
    bad = cli("github", "issue", "list", "-s", "opened", extra_env=genv)
    assert bad.code == 2 and "state=opened is not one of open, closed, all" in bad.stderr
    alone = cli("github", "issue", "list", "--limit", extra_env=genv)
    assert alone.code == 2 and "'--limit' needs a value" in alone.stderr
    # as gh answers a bare --json: the fields there are
    fields = cli("github", "issue", "list", "--json", extra_env=genv)
    assert fields.code == 2
    assert "write --json VALUE, or json=VALUE; it takes assignees|author|" in fields.stderr


def test_release_list_takes_gh_repo_flag_and_json(
    cli: Any, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    gh.add_release("acme", "app", "v1.0.0", name="One")
    code, doc = run(cli, genv, "release", "list", "-R", "acme/app", "--json", "tagName,name")
    assert code == 0, doc
    assert doc["steps"][0]["data"] == [{"name": "One", "tagName": "v1.0.0"}]
    assert sent(gh) == ["/repos/acme/app/releases?per_page=100"]


def test_gh_flags_in_a_capability_bind_as_authored(
    cli: Any, work: Path, gh: GitHubDouble, genv: dict[str, str]
) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  state:\n    required: true\nworkflow:\n"
            "  - provider: github\n"
            '    args: [issue, list, --repo, acme/app, --state, "${state}", --json, "number"]\n'
        ),
    )
    assert cli("capability", "validate", "cap.md").code == 0
    result = cli(
        "-o", "json", "capability", "execute", "cap.md", "--input", "state=closed", extra_env=genv
    )
    assert result.code == 0, result.stdout + result.stderr
    assert result.json()["steps"][0]["data"] == [{"number": 4}]
    # a value from an input is checked as a key=value option's is
    wrong = cli("capability", "execute", "cap.md", "--input", "state=shut", extra_env=genv)
    assert wrong.code == 2 and "state=shut (from input 'state') is not one of" in wrong.stderr


def test_help_shows_the_flags(cli: Any) -> None:
    one = cli("github", "issue", "list", "--help")
    assert one.code == 0
    assert "limit=1.. (--limit, -L): stop after this many items" in one.stdout
    assert "state=open|closed|all (--state, -s)" in one.stdout
    assert "json=assignees|author|" in one.stdout and "(--json)" in one.stdout
    assert "or with --repo / -R" in one.stdout
    assert "[OWNER/REPO|ORG]" in one.stdout
    every = cli("github", "--help")
    assert "repo view: json=createdAt|" in every.stdout
    document = cli("-o", "json", "github", "repo", "view", "--help")
    check_schema(document.json(), "provider-help")
    (json_option,) = [a for a in document.json()["operation"]["arguments"] if a["name"] == "json"]
    assert json_option["flags"] == ["--json"] and json_option["type"] == "list"


# -- a GITHUB_API_URL the context overrides, said on stderr -----------------------------------


def test_a_context_host_that_overrides_github_api_url_says_so_on_stderr(
    cli: Any, work: Path, gh: GitHubDouble
) -> None:
    assert cli("context", "set", "corp", "github_host=ghe.invalid").code == 0
    env = {
        "GITHUB_API_URL": gh.api_url,
        "RUNTIME_GITHUB_TOKEN": TOKEN,
        "RUNTIME_GITHUB_TIMEOUT": "2",
    }
    said = (
        f"warning: step 1 (github user get): GITHUB_API_URL is ignored: it points at "
        f"{gh.host}, but context 'corp' sets github_host ghe.invalid, so the github steps "
        "talk to ghe.invalid"
    )
    direct = cli("github", "user", "get", extra_env=env)
    assert said in direct.stderr
    assert gh.requests == []
    write(
        work / "one.md",
        capability("version: v1\nworkflow:\n  - provider: github\n    args: [user, get]\n"),
    )
    plan = cli("capability", "plan", "one.md", extra_env=env)
    assert said in plan.stdout  # the plan's warnings, after its steps
    executed = cli("capability", "execute", "one.md", extra_env=env)
    assert said in executed.stderr
    # JSON output keeps stderr quiet: there, the step's notes say it
    document = cli("-o", "json", "capability", "execute", "one.md", extra_env=env)
    notes = " ".join(document.json()["steps"][0]["notes"])
    assert "GITHUB_API_URL ignored (another host)" in notes
    # no warning where the context's host is GITHUB_API_URL's
    assert cli("context", "set", "corp", f"github_host={gh.host}").code == 0
    quiet = cli("github", "user", "get", extra_env=env)
    assert quiet.code == 0 and "warning" not in quiet.stderr


# -- preflight: loopback is local -------------------------------------------------------------


@pytest.mark.parametrize("rule", ["public", "local"])
def test_preflight_calls_a_loopback_host_local(
    cli: Any, work: Path, genv: dict[str, str], rule: str
) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: github\n    args: [repo, view, acme/app]\n",
            frontmatter=f"metadata:\n  mda:\n    requires:\n      network: {rule}\n",
        ),
    )
    result = cli("-o", "json", "capability", "preflight", "cap.md", extra_env=genv)
    assert result.code == 0, result.stdout
    checks = {c["id"]: c for c in result.json()["checks"]}
    assert checks["network"]["reason"] == f"network: {rule} covers 127.0.0.1 (local)"
    assert checks["host:127.0.0.1"]["reason"].startswith("127.0.0.1 is a local address")


# -- a token rejected during a step: exit 4 ---------------------------------------------------


@pytest.mark.parametrize(
    "args", [["repo", "view", "acme/app"], ["issue", "list", "acme/app", "--limit", "1"]]
)
def test_a_token_github_rejects_during_a_step_is_exit_4(
    cli: Any, gh: GitHubDouble, genv: dict[str, str], args: list[str]
) -> None:
    wrong = {**genv, "RUNTIME_GITHUB_TOKEN": "rt-wrong-" + "w" * 20}
    text = cli("github", *args, extra_env=wrong)
    assert text.code == 4, text.stderr
    assert "401 Unauthorized" in text.stderr
    assert "store a new one with `runtime auth login github`" in text.stderr
    doc = cli("-o", "json", "github", *args, extra_env=wrong)
    assert doc.code == 4
    body = doc.json()
    check_schema(body, "execute")
    assert (body["exit_code"], body["status"]) == (4, "missing-credential")
    assert body["steps"][0]["http_status"] == 401


def test_a_rejected_token_stops_a_capability_with_exit_4(
    cli: Any, work: Path, genv: dict[str, str]
) -> None:
    write(
        work / "two.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - provider: github\n    args: [user, get]\n"
            "  - provider: github\n    args: [repo, view, acme/app]\n"
        ),
    )
    wrong = {**genv, "RUNTIME_GITHUB_TOKEN": "rt-wrong-" + "w" * 20}
    result = cli("capability", "execute", "two.md", extra_env=wrong)
    assert result.code == 4, result.stderr
    assert "step 2 not run" in result.stderr
