"""The gh CLI transport end to end: the installed ``runtime`` runs the real ``gh``.

``gh`` treats any host but github.com as GitHub Enterprise Server and only
speaks HTTPS to it, so the loopback double runs with ``tls=True`` and the
test's Runtime Home gets a context whose ``github_host`` is the double
(``localhost:PORT``). ``SSL_CERT_FILE`` (which the policy passes through to
gh, and which the runtime's own HTTP client honours) trusts the double's
throwaway CA.

What gh receives cannot be seen from the server, so some tests put a fake
``gh`` first on ``PATH``: a small Python script that records its argv and
environment (and whether ``GH_CONFIG_DIR`` is an empty folder) to a file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.execute.githarden import HARDENING
from runtime.plan.policy_file import load_policy
from tests.conftest import (
    Result,
    capability,
    check_schema,
    confinement_lines,
    require_graphql_schema,
    require_tool,
    write,
)
from tests.github_double import GitHubDouble, load_schema

TOKEN = "rt-gh-cli-token-4c8e1a9f62"  # not shaped like ghp_..., so only registration redacts it
BOGUS = "rt-callers-own-gh-token-0d7b3e5a91"
AWS_SECRET = "aws-secret-that-gh-must-not-see-2f6c"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def graphql_schema() -> None:
    """gh pr list / pr view / workflow run speak GraphQL: the double needs GitHub's schema
    (built once, before the first gh waits on it)."""
    require_graphql_schema("gh pr list, pr view and workflow run send GraphQL")
    load_schema()


@pytest.fixture
def gh(graphql_schema: None) -> Iterator[GitHubDouble]:
    require_tool("gh", "the gh CLI transport runs the real gh")
    require_tool("openssl", "GitHubDouble(tls=True) makes its throwaway CA with openssl")
    with GitHubDouble(token=TOKEN, tls=True, extra_tokens={BOGUS: "intruder"}) as double:
        double.add_user("intruder")
        double.add_org("acme")
        double.add_repo("acme", "app", description="The app")
        double.add_pull("acme", "app", "Add retries", head="retries", body="Retries with backoff")
        double.add_pull("acme", "app", "Fix the build", head="fix-build")
        double.add_workflow("acme", "app", "CI", path=".github/workflows/ci.yml")
        double.add_run(
            "acme", "app", "ci.yml", status="completed", conclusion="success", head_branch="main"
        )
        yield double


@pytest.fixture
def host(gh: GitHubDouble) -> str:
    return f"localhost:{gh.port}"


@pytest.fixture
def run(cli_proc: Callable[..., Result], gh: GitHubDouble, host: str) -> Callable[..., Result]:
    """``runtime`` as a child process, with a context pointing at the double."""
    base = {"SSL_CERT_FILE": gh.ca_file, "RUNTIME_GITHUB_TOKEN": TOKEN}
    made = cli_proc("context", "set", "test", f"github_host={host}", extra_env=base)
    assert made.code == 0, made.stdout + made.stderr

    def call(*args: str, extra_env: dict[str, str] | None = None, **kw: Any) -> Result:
        return cli_proc(*args, extra_env={**base, **(extra_env or {})}, **kw)

    return call


def audit_text(home: Path) -> str:
    path = home / "audit" / "audit.jsonl"
    return path.read_text() if path.exists() else ""


def assert_no_token(result: Result, home: Path, *secrets: str) -> None:
    for secret in secrets or (TOKEN,):
        assert secret not in result.stdout, result.stdout
        assert secret not in result.stderr, result.stderr
        assert secret not in audit_text(home)


def assert_runtime_token_only(gh: GitHubDouble) -> None:
    assert gh.requests, "gh sent nothing to the double"
    for request in gh.requests:
        auth = request.headers.get("authorization", "")
        assert auth.split(" ", 1)[-1] == TOKEN, (request.method, request.path, auth)


def assert_hardened(env: dict[str, str]) -> None:
    """Every entry of runtime's git hardening is in ``env``, with its value, and no other
    ``GIT_`` variable."""
    config = {
        env[f"GIT_CONFIG_KEY_{n}"]: env[f"GIT_CONFIG_VALUE_{n}"]
        for n in range(int(env.get("GIT_CONFIG_COUNT", "0")))
    }
    for key, value, _why in HARDENING:
        seen = config.get(key) if "." in key else env.get(key)
        assert seen == value, (key, seen)
    numbered = {f"GIT_CONFIG_{kind}_{n}" for kind in ("KEY", "VALUE") for n in range(len(config))}
    named = {key for key, _value, _why in HARDENING if "." not in key}
    assert {k for k in env if k.startswith("GIT_")} == {"GIT_CONFIG_COUNT", *numbered, *named}


FAKE_GH = """\
#!{python}
import json, os, sys
config = os.environ.get("GH_CONFIG_DIR")
entry = {{
    "argv": sys.argv,
    "env": dict(os.environ),
    "config_dir_is_dir": bool(config) and os.path.isdir(config),
    "config_dir_listing": sorted(os.listdir(config)) if config and os.path.isdir(config) else None,
}}
with open({record!r}, "a", encoding="utf-8") as f:
    f.write(json.dumps(entry) + "\\n")
mode = {mode!r}
token = os.environ.get("GH_ENTERPRISE_TOKEN", "")
if mode == "record":
    print(json.dumps([{{"number": 7, "title": "from the fake gh"}}]))
elif mode == "echo":
    print("gh says: token is " + token)
    print("gh warns: token is " + token, file=sys.stderr)
elif mode == "echo-fail":
    print("HTTP 401: Bad credentials for token " + token, file=sys.stderr)
    sys.exit(3)
"""


@pytest.fixture
def fake_gh(tmp_path: Path) -> Callable[[str], tuple[dict[str, str], Path]]:
    """Install a fake gh; returns (extra env putting it first on PATH, its record file)."""

    def install(mode: str) -> tuple[dict[str, str], Path]:
        folder = tmp_path / f"fake-gh-{mode}"
        record = folder / "record.jsonl"
        script = write(
            folder / "bin" / "gh",
            FAKE_GH.format(python=sys.executable, record=str(record), mode=mode),
        )
        script.chmod(0o755)
        # a Python script that records beside itself: its interpreter and folder made visible
        policy = write(folder / "policy.yaml", confinement_lines(folder))
        return {
            "PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "RUNTIME_POLICY_FILE": str(policy),
        }, record

    return install


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ----------------------------------------------------------------- the real gh, real TLS


def test_pr_list_json_is_parsed_into_step_data(
    run: Callable[..., Result], gh: GitHubDouble, home: Path
) -> None:
    text = run("github", "pr", "list", "--repo", "acme/app", "--json", "number,title")
    assert text.code == 0, text.stdout + text.stderr
    assert '"title":"Add retries"' in text.stdout

    doc = run("-o", "json", "github", "pr", "list", "--repo", "acme/app", "--json", "number,title")
    assert doc.code == 0, doc.stdout + doc.stderr
    body = doc.json()
    check_schema(body, "execute")
    (step,) = body["steps"]
    assert step["transport"] == "cli"
    assert step["status"] == "ok"
    assert sorted(step["data"], key=lambda pr: pr["number"]) == [
        {"number": 1, "title": "Add retries"},
        {"number": 2, "title": "Fix the build"},
    ]
    assert any("query PullRequestList" in q["query"] for q in gh.graphql_queries)
    assert_runtime_token_only(gh)
    assert_no_token(text, home)
    assert_no_token(doc, home)


def test_pr_view(run: Callable[..., Result], gh: GitHubDouble, home: Path) -> None:
    result = run("github", "pr", "view", "1", "--repo", "acme/app")
    assert result.code == 0, result.stdout + result.stderr
    assert "title:\tAdd retries" in result.stdout
    assert "number:\t1" in result.stdout
    assert "Retries with backoff" in result.stdout
    assert_runtime_token_only(gh)
    assert_no_token(result, home)


def test_run_list(run: Callable[..., Result], gh: GitHubDouble, home: Path) -> None:
    result = run("github", "run", "list", "--repo", "acme/app")
    assert result.code == 0, result.stdout + result.stderr
    assert "completed\tsuccess\tCI" in result.stdout
    paths = [r.path.partition("?")[0] for r in gh.requests]
    assert "/api/v3/repos/acme/app/actions/runs" in paths
    assert_runtime_token_only(gh)
    assert_no_token(result, home)


def test_workflow_run_dispatches(run: Callable[..., Result], gh: GitHubDouble, home: Path) -> None:
    repo = gh.repo("acme", "app")
    assert repo is not None
    result = run("github", "workflow", "run", "ci.yml", "--repo", "acme/app", "--ref", "main")
    assert result.code == 0, result.stdout + result.stderr
    assert len(repo.dispatches) == 1
    dispatch = repo.dispatches[0]
    assert dispatch["ref"] == "main"
    assert dispatch["actor"] == "octocat"
    posts = [r for r in gh.requests if r.method == "POST" and r.path.endswith("/dispatches")]
    assert len(posts) == 1
    assert_runtime_token_only(gh)
    assert_no_token(result, home)


def test_the_callers_own_gh_login_is_never_used(
    run: Callable[..., Result], gh: GitHubDouble, host: str, home: Path, tmp_path: Path
) -> None:
    """A gh login of the caller (hosts.yml, GH_CONFIG_DIR, GH_*_TOKEN) must not leak in."""
    hosts = f"{host}:\n    oauth_token: {BOGUS}\n    user: intruder\n    git_protocol: https\n"
    caller = tmp_path / "caller"
    for folder in (caller / ".config" / "gh", caller / "xdg" / "gh", caller / "gh-config"):
        write(folder / "hosts.yml", hosts)
        write(folder / "config.yml", "git_protocol: https\nprompt: enabled\n")
    before = {p: p.read_text() for p in caller.rglob("*.yml")}
    env = {
        "HOME": str(caller),
        "XDG_CONFIG_HOME": str(caller / "xdg"),
        "GH_CONFIG_DIR": str(caller / "gh-config"),
        "GH_TOKEN": BOGUS,
        "GITHUB_TOKEN": BOGUS,
        "GH_ENTERPRISE_TOKEN": BOGUS,
        "GITHUB_ENTERPRISE_TOKEN": BOGUS,
        "GH_HOST": "github.com",
    }
    listed = run("github", "pr", "list", "--repo", "acme/app", "--json", "number", extra_env=env)
    assert listed.code == 0, listed.stdout + listed.stderr
    dispatched = run(
        "github", "workflow", "run", "ci.yml", "--repo", "acme/app", "--ref", "main", extra_env=env
    )
    assert dispatched.code == 0, dispatched.stdout + dispatched.stderr
    repo = gh.repo("acme", "app")
    assert repo is not None
    assert [d["actor"] for d in repo.dispatches] == ["octocat"]  # not "intruder"
    assert_runtime_token_only(gh)
    assert {p: p.read_text() for p in caller.rglob("*.yml")} == before
    assert_no_token(listed, home, TOKEN, BOGUS)
    assert_no_token(dispatched, home, TOKEN, BOGUS)


# ------------------------------------------------------------------------- a fake gh


def test_gh_gets_a_bounded_environment_and_no_token_in_argv(
    run: Callable[..., Result],
    fake_gh: Callable[[str], tuple[dict[str, str], Path]],
    host: str,
    home: Path,
    tmp_path: Path,
) -> None:
    path_env, record = fake_gh("record")
    callers_config = tmp_path / "callers-gh-config"
    write(callers_config / "hosts.yml", f"{host}:\n    oauth_token: {BOGUS}\n")
    env = {
        **path_env,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "SOME_UNRELATED_VARIABLE": "unrelated",
        "GH_TOKEN": BOGUS,
        "GITHUB_TOKEN": BOGUS,
        "GH_CONFIG_DIR": str(callers_config),
        "TZ": "UTC",
    }
    result = run(
        "-o",
        "json",
        "github",
        "pr",
        "list",
        "--repo",
        "acme/app",
        "--json",
        "number,title",
        extra_env=env,
    )
    assert result.code == 0, result.stdout + result.stderr
    assert result.json()["steps"][0]["data"] == [{"number": 7, "title": "from the fake gh"}]

    (seen,) = records(record)
    argv, child = seen["argv"], seen["env"]
    assert argv[1:] == ["pr", "list", "--repo", "acme/app", "--json", "number,title"]
    assert not any(TOKEN in arg for arg in argv)
    # the token travels in GH_ENTERPRISE_TOKEN (an enterprise host) and nowhere else
    assert child["GH_ENTERPRISE_TOKEN"] == TOKEN
    assert [name for name, value in child.items() if TOKEN in value] == ["GH_ENTERPRISE_TOKEN"]
    assert child["GH_HOST"] == host
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "RUNTIME_GITHUB_TOKEN"):
        assert name not in child, name
    assert "AWS_SECRET_ACCESS_KEY" not in child
    assert "SOME_UNRELATED_VARIABLE" not in child
    assert not any(AWS_SECRET in value or BOGUS in value for value in child.values())
    # gh's own config: a fresh, empty folder, not the caller's, removed afterwards
    config_dir = Path(child["GH_CONFIG_DIR"])
    assert config_dir != callers_config
    assert seen["config_dir_is_dir"] is True
    assert seen["config_dir_listing"] == []
    assert not config_dir.exists()
    # quiet and non-interactive
    for name, value in {
        "GH_PROMPT_DISABLED": "1",
        "GH_NO_UPDATE_NOTIFIER": "1",
        "GH_PAGER": "cat",
        "NO_COLOR": "1",
    }.items():
        assert child.get(name) == value, name
    # allow-listed variables pass through
    assert child["TZ"] == "UTC"
    assert child["PATH"] == env["PATH"]
    policy_names = set(load_policy(None).binary_environment)  # the default policy's allow-list
    assert {"PATH", "SSL_CERT_FILE"} <= policy_names
    # and runtime's hardened git, for the git gh starts
    assert_hardened(child)
    extra = {n for n in child if n not in policy_names and not n.startswith(("GH_", "GIT_"))}
    # bubblewrap sets PWD when it confines the step; the proxy variables name the step's
    # own proxy, the only way out of its network namespace
    proxies = {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"}
    assert extra <= {"PWD", *proxies}, extra
    if "HTTPS_PROXY" in child:
        assert {child[name] for name in proxies} == {"http://127.0.0.1:3128"}
    assert_no_token(result, home, TOKEN, AWS_SECRET)


def test_gh_output_that_echoes_the_token_is_redacted(
    run: Callable[..., Result],
    fake_gh: Callable[[str], tuple[dict[str, str], Path]],
    home: Path,
) -> None:
    path_env, _ = fake_gh("echo")
    text = run("github", "pr", "list", "--repo", "acme/app", extra_env=path_env)
    assert text.code == 0, text.stdout + text.stderr
    assert "gh says: token is [REDACTED]" in text.stdout
    assert "gh warns: token is [REDACTED]" in text.stderr
    assert_no_token(text, home)

    doc = run("-o", "json", "github", "pr", "list", "--repo", "acme/app", extra_env=path_env)
    assert doc.code == 0, doc.stdout + doc.stderr
    step = doc.json()["steps"][0]
    assert "[REDACTED]" in step["output"]
    assert_no_token(doc, home)

    path_env, _ = fake_gh("echo-fail")
    failed = run("github", "pr", "list", "--repo", "acme/app", extra_env=path_env)
    assert failed.code == 4, failed.stdout + failed.stderr  # gh's 401: a rejected credential
    assert "Bad credentials for token [REDACTED]" in failed.stdout + failed.stderr
    assert "gh pr list exited with code 3" in failed.stderr
    assert_no_token(failed, home)


def test_a_refused_token_is_said_as_gh_says_it_first(
    run: Callable[..., Result], gh: GitHubDouble, home: Path
) -> None:
    # the real gh's message: "HTTP 401: Bad credentials (URL)", then "Try authenticating
    # with: gh auth login", which is not how runtime gives gh its token
    wrong = "rt-wrong-token-for-gh-7e21c4"
    failed = run(
        "github", "pr", "list", "--repo", "acme/app", extra_env={"RUNTIME_GITHUB_TOKEN": wrong}
    )
    # a credential failure (exit 4), as a REST step's 401 and `runtime auth login` are
    assert failed.code == 4, failed.stdout + failed.stderr
    error = next(line for line in failed.stderr.splitlines() if "error:" in line)
    assert "gh pr list exited with code 1: HTTP 401: Bad credentials" in error
    assert "gh auth login" not in error
    assert (
        f"hint: localhost:{gh.port} refused the github credential runtime gave gh: check it "
        "with `runtime auth status --live`"
    ) in failed.stderr
    assert_no_token(failed, home, wrong)


def test_missing_credential_is_exit_4_before_gh_runs(
    cli_proc: Callable[..., Result],
    fake_gh: Callable[[str], tuple[dict[str, str], Path]],
    gh: GitHubDouble,
    host: str,
    work: Path,
) -> None:
    path_env, record = fake_gh("record")
    env = {
        **path_env,
        "SSL_CERT_FILE": gh.ca_file,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",  # an empty keyring
    }
    assert cli_proc("context", "set", "test", f"github_host={host}", extra_env=env).code == 0

    result = cli_proc("github", "pr", "list", "--repo", "acme/app", extra_env=env)
    assert result.code == 4, result.stdout + result.stderr
    assert f"no github credential for {host}" in result.stderr
    assert f"hint: run `runtime auth login github --host {host}`" in result.stderr
    assert "RUNTIME_GITHUB_TOKEN" in result.stderr
    assert not record.exists(), "gh ran although there was no credential"

    cap = write(
        work / "dispatch.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - provider: github\n    args: [workflow, run, ci.yml, --repo, acme/app]\n",
            frontmatter="name: dispatch\ndescription: Dispatch CI\n",
        ),
    )
    doc = cli_proc("-o", "json", "capability", "execute", str(cap), extra_env=env)
    assert doc.code == 4, doc.stdout + doc.stderr
    body = doc.json()
    check_schema(body, "error")  # checked before the first step: nothing ran
    assert body["exit_code"] == 4
    assert body["error"]["code"] == "missing-credential"
    assert body["error"]["message"].endswith("nothing ran")
    assert f"runtime auth login github --host {host}" in body["error"]["hint"]
    assert not record.exists()
    assert gh.requests == []


# ------------------------------------------------------------------------ a capability


def test_capability_with_gh_steps_end_to_end(
    run: Callable[..., Result], gh: GitHubDouble, home: Path, work: Path
) -> None:
    cap = write(
        work / "release-check.md",
        capability(
            "version: v1\n"
            "inputs:\n"
            "  repository:\n    description: OWNER/REPO\n    required: true\n"
            "  ref:\n    description: Branch to run CI on\n    required: true\n"
            "workflow:\n"
            "  - provider: github\n"
            '    args: [pr, list, --repo, "${repository}", --json, "number,title"]\n'
            "  - provider: github\n"
            '    args: [workflow, run, ci.yml, --repo, "${repository}", --ref, "${ref}"]\n'
            "  - provider: github\n"
            '    args: [run, list, --repo, "${repository}"]\n',
            frontmatter="name: release-check\ndescription: Open PRs, then run CI\n",
            title="Release check",
        ),
    )
    inputs = ("--input", "repository=acme/app", "--input", "ref=main")
    plan = run("capability", "plan", str(cap), *inputs, "--verbose")
    assert plan.code == 0, plan.stdout + plan.stderr
    assert "transport: cli" in plan.stdout
    assert gh.requests == []  # planning sends nothing

    result = run("-o", "json", "capability", "execute", str(cap), *inputs)
    assert result.code == 0, result.stdout + result.stderr
    body = result.json()
    check_schema(body, "execute")
    assert [s["status"] for s in body["steps"]] == ["ok", "ok", "ok"]
    assert [s["operation"] for s in body["steps"]] == ["pr list", "workflow run", "run list"]
    assert sorted(pr["number"] for pr in body["steps"][0]["data"]) == [1, 2]
    repo = gh.repo("acme", "app")
    assert repo is not None
    assert [d["ref"] for d in repo.dispatches] == ["main"]
    # the dispatch queued a run, which the third step sees
    assert body["steps"][2]["data"]["stdout"].count("\tCI\t") == 2
    assert_runtime_token_only(gh)
    assert_no_token(result, home)
    events = [json.loads(line) for line in audit_text(home).splitlines()]
    steps = [e for e in events if e.get("event") == "step"]
    assert [e["operation"] for e in steps] == ["pr list", "workflow run", "run list"]
    assert all(e["transport"] == "cli" and e["status"] == "ok" for e in steps)


# ------------------------------------------------------------- the git that gh starts

FAKE_GIT = """\
#!{python}
import json, os, sys
with open({record!r}, "a", encoding="utf-8") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ)}}) + "\\n")
sys.exit(1)
"""


@pytest.fixture
def fake_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A fake git first on PATH that records its args and environment, then fails: the real
    gh starts it as it starts git. Returns (extra env, its record file)."""
    folder = tmp_path / "fake-git"
    record = folder / "record.jsonl"
    script = write(
        folder / "bin" / "git", FAKE_GIT.format(python=sys.executable, record=str(record))
    )
    script.chmod(0o755)
    policy = write(folder / "policy.yaml", confinement_lines(folder))
    return {
        "PATH": f"{script.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "RUNTIME_POLICY_FILE": str(policy),
    }, record


def test_the_git_gh_repo_clone_starts_is_hardened(
    run: Callable[..., Result], fake_git: tuple[dict[str, str], Path], work: Path
) -> None:
    """gh hands its environment to the git it starts: runtime's hardening reaches that git."""
    path_env, record = fake_git
    cap = write(
        work / "clone.md",
        capability(
            "version: v1\nworkflow:\n"
            "  - binary: gh\n    args: [repo, clone, acme/app, dst, --, --depth=1]\n"
        ),
    )
    result = run("capability", "execute", str(cap), extra_env=path_env)
    assert result.code == 1, result.stdout + result.stderr  # the fake git fails the clone
    (clone,) = [r for r in records(record) if "clone" in r["argv"]]
    # gh's own credential helper comes as -c, before git's clone and the args after `--`
    assert clone["argv"][-4:] == ["clone", "--depth=1", clone["argv"][-2], "dst"]
    assert clone["argv"][-2].endswith("/acme/app.git")
    assert_hardened(clone["env"])


def test_the_git_a_github_operation_starts_is_hardened(
    run: Callable[..., Result], fake_git: tuple[dict[str, str], Path]
) -> None:
    """Without --repo, gh reads the checkout's remotes with git: the provider's gh too."""
    path_env, record = fake_git
    result = run("github", "pr", "list", extra_env=path_env)
    assert result.code == 1, result.stdout + result.stderr
    (remotes,) = [r for r in records(record) if r["argv"] == ["remote", "-v"]]
    assert_hardened(remotes["env"])


def test_the_git_gh_starts_reads_no_user_configuration(
    run: Callable[..., Result], gh: GitHubDouble, host: str, work: Path
) -> None:
    """The real gh and the real git: a user's ~/.gitconfig that rewrites the clone URL to
    ext::sh (and allows ext) runs no shell, and neither would the repository's."""
    user = work / "user"  # inside the working folder, so the confined step sees it
    canary = work / "CANARY"
    write(
        user / ".gitconfig",
        '[protocol "ext"]\n\tallow = always\n'
        f'[url "ext::sh -c touch% {canary}% #"]\n\tinsteadOf = https://{host}/\n',
    )
    cap = write(
        work / "clone.md",
        capability(
            "version: v1\nworkflow:\n  - binary: gh\n    args: [repo, clone, acme/app, dst]\n"
        ),
    )
    result = run("capability", "execute", str(cap), extra_env={"HOME": str(user)})
    # gh looked the repository up, then its git tried https (the double serves no git)
    assert result.code == 1, result.stdout + result.stderr
    assert "/api/graphql" in [r.path for r in gh.requests]
    assert f"https://{host}/acme/app.git" in result.stdout + result.stderr
    assert not canary.exists()


# ------------------------------------------------------- the args gh hands to git clone


@pytest.mark.parametrize("how", ["written", "inputs", "typed"])
def test_git_clone_flags_after_ghs_separator_are_decided_before_anything_runs(
    run: Callable[..., Result], gh: GitHubDouble, host: str, work: Path, how: str
) -> None:
    """`gh repo clone REPO DIR -- FLAGS` runs `git clone FLAGS URL DIR`: a --config that
    allows ext:: and rewrites the URL to one would run a shell in a git that holds gh's
    token. Refused as a git step's `git clone --config=...` is, before gh runs."""
    canary = work / "CANARY"
    flags = [
        "--config=protocol.ext.allow=always",
        f"--config=url.ext::sh -c touch% {canary}% #.insteadOf=https://{host}/",
    ]
    if how == "typed":
        result = run("command", "run", "gh", "repo", "clone", "acme/app", "dst", "--", *flags)
        code = 3
    else:
        inputs: list[str] = []
        if how == "written":
            args = ", ".join(json.dumps(flag) for flag in flags)
            head = ""
            code = 3
        else:  # two inputs after an authored `--`: git's options again
            args = '"${a}", "${b}"'
            head = "inputs:\n  a:\n    required: true\n  b:\n    required: true\n"
            inputs = ["--input", f"a={flags[0]}", "--input", f"b={flags[1]}"]
            code = 2
        cap = write(
            work / "clone.md",
            capability(
                f"version: v1\n{head}workflow:\n"
                f"  - binary: gh\n    args: [repo, clone, acme/app, dst, --, {args}]\n"
            ),
        )
        result = run("capability", "execute", str(cap), *inputs)
    assert result.code == code, result.stdout + result.stderr
    text = result.stdout + result.stderr
    assert "nothing ran" in text, text
    if code == 3:
        assert "denied_arguments: git --config" in text
        assert "gh repo clone runs `git clone" in text
    else:
        assert "input 'a', 'b' would become an option" in text
        assert "git clone, which gh hands the args after its `--`" in text
    assert gh.requests == []
    assert not canary.exists() and not (work / "dst").exists()


def test_an_ordinary_gh_clone_with_git_flags_still_runs(
    run: Callable[..., Result], fake_git: tuple[dict[str, str], Path], work: Path
) -> None:
    """Decided as git's, harmless git clone flags go through (a fake git records them), and
    an input after gh's `--` that is no option: the directory, which gh puts last."""
    path_env, record = fake_git
    cap = write(
        work / "clone.md",
        capability(
            "version: v1\ninputs:\n  where:\n    required: true\nworkflow:\n"
            "  - binary: gh\n"
            '    args: [repo, clone, acme/app, --, "${where}", --depth=1, --single-branch]\n'
        ),
    )
    result = run("capability", "execute", str(cap), "--input", "where=dst", extra_env=path_env)
    assert result.code == 1, result.stdout + result.stderr  # the fake git fails
    (clone,) = [r for r in records(record) if "clone" in r["argv"]]
    after = clone["argv"][clone["argv"].index("clone") :]
    assert after[:3] == ["clone", "--depth=1", "--single-branch"]
    assert after[3].endswith("/acme/app.git") and after[4:] == ["dst"]
    # the same input as an option is refused: git would read it as one
    refused = run("capability", "execute", str(cap), "--input", "where=--bare", extra_env=path_env)
    assert refused.code == 2, refused.stdout + refused.stderr
    assert len([r for r in records(record) if "clone" in r["argv"]]) == 1
