"""Engineering Runtime's CI conformance workflow, replayed in our own words against a fresh
Runtime Home: the installed ``runtime``, the loopback GitHub double over TLS, the real
``gh`` and a real Secret Service (gnome-keyring on a private D-Bus session bus).

ER's CI bootstraps an empty throwaway Home (its jobs name it ENGINEERING_RUNTIME_HOME),
checks what bootstrap left there, validates a capability store, runs an auth-free
capability, logs in, calls GitHub through each transport (REST, GraphQL, gh), checks the
files and command rows (a refused delete, a refused gcloud change: the negative rows fail
when something is allowed), runs a capability of several transports, logs out and prints
the audit trail. Each row below is one of those steps; a failure names its row.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    Result,
    capability,
    keyring_service,
    require_graphql_schema,
    require_tool,
    write,
)
from tests.github_double import GitHubDouble, load_schema
from tests.secret_service import SecretSession, secret_session

pytestmark = pytest.mark.integration

TOKEN = "rt-er-conformance-token-" + "7c" * 8

# a capability store of our own, in the shape of ER's: folders by provider, a README each
NOTES = """version: v1
inputs:
  path:
    description: the file to write and read back
    required: true
  message:
    description: what to write
    required: true
workflow:
  - provider: files
    args: [write, "${path}", "${message}"]
  - provider: files
    args: [read, "${path}"]
"""
HEALTH = """version: v1
inputs:
  repository:
    description: the repository, as owner/name
    required: true
workflow:
  - provider: github
    args: [repo, summary, "${repository}"]
  - provider: github
    args: [pr, list, --repo, "${repository}", --json, "number,title,author"]
  - provider: github
    args: [run, list, --repo, "${repository}", --limit, "5"]
"""
ISSUES = """version: v1
workflow:
  - provider: github
    args: [issue, list, --repo, acme/app, --limit, "5"]
"""

FAKE_GCLOUD = """#!{python}
import sys
open({record!r}, "a").write(" ".join(sys.argv) + "\\n")
"""


@pytest.fixture
def double() -> Iterator[GitHubDouble]:
    require_tool("gh", "the CLI transport row runs the real gh")
    require_tool("git", "the command row runs git --version")
    require_tool("openssl", "GitHubDouble(tls=True) makes its throwaway CA with openssl")
    require_graphql_schema("repo summary and gh pr list send GraphQL to the double")
    load_schema()
    with GitHubDouble(token=TOKEN, tls=True) as gh:
        gh.add_org("acme")
        gh.add_repo("acme", "app", description="The app")
        gh.add_issue("acme", "app", "Crash on start")
        gh.add_pull("acme", "app", "Add retries", head="retries")
        gh.add_workflow("acme", "app", "CI", path=".github/workflows/ci.yml")
        gh.add_run("acme", "app", "ci.yml", status="completed", conclusion="success")
        gh.add_notification("acme", "app", "Crash on start", type="Issue")
        yield gh


@pytest.fixture
def keyring(tmp_path: Path) -> Iterator[SecretSession]:
    with secret_session(tmp_path / "keyring") as session:
        yield session


def test_er_ci_conformance_rows_against_a_fresh_home(
    cli_proc: Callable[..., Result],
    env: dict[str, str],
    tmp_path: Path,
    work: Path,
    double: GitHubDouble,
    keyring: SecretSession,
) -> None:
    # ER's jobs name Home by ER's variable; RUNTIME_HOME is not set
    er_home = tmp_path / "runtime-home"
    del env["RUNTIME_HOME"]
    env.update(
        {
            "ENGINEERING_RUNTIME_HOME": str(er_home),
            "SSL_CERT_FILE": double.ca_file,
            **keyring.env(),
        }
    )
    host = f"localhost:{double.port}"

    def row(name: str, *args: str, code: int = 0, **kw: Any) -> Result:
        result = cli_proc(*args, **kw)
        assert result.code == code, f"row '{name}': {result.stdout}{result.stderr}"
        for text in (result.stdout, result.stderr):
            assert TOKEN not in text, f"row '{name}' shows the token"
        return result

    with_token = {"extra_env": {"RUNTIME_GITHUB_TOKEN": TOKEN}}

    # -- bootstrap, and what it left in Home -----------------------------------------------
    row("bootstrap", "bootstrap")
    for name in ("config.yaml", "policy-config.yaml", "policy.yaml", "context.yaml"):
        assert not (er_home / name).exists(), f"bootstrap made {name}"
    assert (er_home / "capabilities").is_dir()
    assert list((er_home / "capabilities").iterdir()) == []
    listed = row("capability list on a fresh Home", "capability", "list")
    assert "No capabilities resolved." in listed.stdout
    # the job points the github provider at the double (ER's jobs use github.com)
    row("context", "context", "set", "ci", f"github_host={host}")

    # -- validate every capability of the store, in one call --------------------------------
    store = tmp_path / "store"
    write(store / "README.md", "# Our capabilities\n")
    write(store / "files" / "README.md", "# files\n")
    write(store / "files" / "notes-roundtrip.md", capability(NOTES, title="Notes round trip"))
    write(store / "github" / "README.md", "# github\n")
    write(store / "github" / "repo-health.md", capability(HEALTH, title="Repo health"))
    write(store / "github" / "issues.md", capability(ISSUES, title="Issues"))
    validated = row("validate the store", "capability", "validate", str(store))
    assert "3 checked: 3 valid, 0 invalid" in validated.stdout
    assert "by folder:" in validated.stdout

    # -- the auth-free capability: the notes round trip -------------------------------------
    notes = row(
        "notes round trip",
        "capability",
        "execute",
        str(store / "files" / "notes-roundtrip.md"),
        "--input",
        "path=./notes.txt",
        "--input",
        "message=hello from the conformance replay",
    )
    assert "hello from the conformance replay" in notes.stdout
    assert (work / "notes.txt").read_text().strip() == "hello from the conformance replay"

    # -- auth: status, login (ER's row: the variable set, nothing on stdin; then a token
    # stored in the real keyring), and the GitHub rows on the keyring's token -------------
    status = row("auth status", "auth", "status", **with_token)
    assert f"{host}: environment variable RUNTIME_GITHUB_TOKEN" in status.stdout
    from_env = row("auth login github (from the variable)", "auth", "login", "github", **with_token)
    assert "RUNTIME_GITHUB_TOKEN is set and valid" in from_env.stdout
    assert keyring.items(keyring_service(host)) == []
    stored = row("auth login github (to the keyring)", "auth", "login", "github", input=TOKEN)
    assert f"logged in to {host} as octocat; the token is in the keyring" in stored.stdout
    assert [secret for _, secret in keyring.items(keyring_service(host))] == [TOKEN]
    assert f"{host}: keyring\n" in row("auth status (keyring)", "auth", "status").stdout

    user = row("github user get", "github", "user", "get")
    assert "login: octocat" in user.stdout
    assert "acme" in row("github org list", "github", "org", "list").stdout
    assert (
        "Crash on start" in row("github notification list", "github", "notification", "list").stdout
    )

    # -- one real operation per transport ---------------------------------------------------
    double.reset_counters()
    row("REST: repo view", "github", "repo", "view", "acme/app")
    row("REST: api GET", "github", "api", "GET", "/repos/acme/app")
    assert [r.path for r in double.requests] == ["/api/v3/repos/acme/app"] * 2
    summary = row("GraphQL: repo summary", "-o", "json", "github", "repo", "summary", "acme/app")
    assert summary.json()["steps"][0]["transport"] == "graphql"
    runs = row(
        "gh: run list", "-o", "json", "github", "run", "list", "--repo", "acme/app", "--limit", "1"
    )
    assert runs.json()["steps"][0]["transport"] == "cli"
    pulls = row("gh: pr list", "github", "pr", "list", "--repo", "acme/app", "--limit", "1")
    assert "Add retries" in pulls.stdout
    row("gh: workflow list", "github", "workflow", "list", "--repo", "acme/app")
    issues = row(
        "issue list --limit", "github", "issue", "list", "--repo", "acme/app", "--limit", "5"
    )
    assert "acme/app#1" in issues.stdout

    # -- the files rows: write and read allowed, delete refused -----------------------------
    row("files write", "files", "write", "./conformance.txt", "file engine")
    assert "file engine" in row("files read", "files", "read", "./conformance.txt").stdout
    row("files delete is refused", "files", "delete", "./conformance.txt", code=3)
    assert (work / "conformance.txt").exists(), "files delete ran"

    # -- the command rows -------------------------------------------------------------------
    assert (
        "git version"
        in row("command run git --version", "command", "run", "git", "--version").stdout
    )
    # the gcloud change stays refused by the policy, exit 3 before anything runs: a gcloud
    # first on PATH records if it is run, and with no gcloud on PATH at all the refusal is
    # still the policy's, never a lookup's (exit 5)
    record = tmp_path / "gcloud-ran.txt"
    fake = write(
        tmp_path / "bin" / "gcloud", FAKE_GCLOUD.format(python=sys.executable, record=str(record))
    )
    fake.chmod(0o755)
    deploy = (
        "command", "run", "gcloud", "run", "deploy", "conformance-probe",
        "--image=invalid", "--region=invalid-region-xyz",
    )  # fmt: skip
    path = f"{fake.parent}{os.pathsep}{env['PATH']}"
    refused = row("gcloud change refused", *deploy, code=3, extra_env={"PATH": path})
    assert "refused" in refused.stderr and "nothing ran" in refused.stderr
    assert not record.exists(), "gcloud ran"
    absent = row(
        "gcloud change refused, no gcloud",
        *deploy,
        code=3,
        extra_env={"PATH": str(tmp_path / "empty")},
    )
    assert "nothing ran" in absent.stderr

    # -- the same operations inside a capability --------------------------------------------
    health = row(
        "capability execute (three transports)",
        "-o",
        "json",
        "capability",
        "execute",
        str(store / "github" / "repo-health.md"),
        "--input",
        "repository=acme/app",
    )
    transports = [step["transport"] for step in health.json()["steps"]]
    assert transports == ["graphql", "cli", "cli"]
    row(
        "capability execute (issue list --limit)",
        "capability",
        "execute",
        str(store / "github" / "issues.md"),
    )

    # -- logout, and the audit trail ------------------------------------------------------
    gone = row("auth logout github", "auth", "logout", "github")
    assert f"removed the {host} token from the keyring" in gone.stdout
    assert keyring.items(keyring_service(host)) == []
    tail = row("audit tail", "audit", "tail", "-n", "50")
    for seen in ("files write", "git --version", "gcloud run deploy", "repo summary", "pr list"):
        assert seen in tail.stdout, f"the audit tail has no {seen!r}"
    records = [
        json.loads(line) for line in (er_home / "audit" / "audit.jsonl").read_text().splitlines()
    ]
    assert TOKEN not in json.dumps(records)
