"""Which host a token belongs to, and where it may go (regressions of real bugs)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.conftest import capability, confinement_lines, write
from tests.github_double import GitHubDouble

TOKEN = "rt-host-token-" + "q" * 20


def test_context_host_token_never_goes_to_github_api_url_of_another_host(cli, work: Path) -> None:
    with GitHubDouble(token=TOKEN) as other:
        cli("context", "set", "corp", "github_host=ghe.invalid")
        env = {
            "GITHUB_API_URL": other.api_url,
            "RUNTIME_GITHUB_TOKEN": TOKEN,
            "RUNTIME_GITHUB_TIMEOUT": "2",
        }
        result = cli("--output", "json", "github", "user", "get", extra_env=env)
        assert result.code == 1
        assert other.requests == []
        assert "ghe.invalid" in result.json()["steps"][0]["error"]
        plan = cli("--output", "json", "capability", "plan", *_one_step(work), extra_env=env).json()
        assert "GITHUB_API_URL ignored (another host)" in " ".join(plan["steps"][0]["notes"])


@pytest.mark.usefixtures("graphql_schema")
def test_the_token_never_goes_to_a_graphql_url_of_another_host(cli, work: Path) -> None:
    with GitHubDouble(token=TOKEN) as home, GitHubDouble(token=TOKEN) as other:
        home.add_org("acme")
        home.add_repo("acme", "app")
        env = {
            "GITHUB_API_URL": home.api_url,
            "GITHUB_GRAPHQL_URL": other.graphql_url,  # another port: another host
            "RUNTIME_GITHUB_TOKEN": TOKEN,
        }
        summary = cli("--output", "json", "github", "repo", "summary", "acme/app", extra_env=env)
        assert summary.code == 0, summary.stdout + summary.stderr
        assert other.requests == []
        assert [r.path for r in home.requests] == ["/graphql"]
        write(
            work / "summary.md",
            capability(
                "version: v1\nworkflow:\n  - provider: github\n    args: [repo, summary, a/b]\n"
            ),
        )
        plan = cli("--output", "json", "capability", "plan", "summary.md", extra_env=env).json()
        notes = " ".join(plan["steps"][0]["notes"])
        assert "GITHUB_GRAPHQL_URL ignored (another host)" in notes
        # a context's host: neither variable's host gets its token
        cli("context", "set", "corp", "github_host=ghe.invalid")
        env["RUNTIME_GITHUB_TIMEOUT"] = "2"
        refused = cli("github", "repo", "summary", "acme/app", extra_env=env)
        assert refused.code == 1
        assert other.requests == [] and [r.path for r in home.requests] == ["/graphql"]


def _one_step(work: Path) -> list[str]:
    write(
        work / "one.md",
        capability("version: v1\nworkflow:\n  - provider: github\n    args: [user, get]\n"),
    )
    return ["one.md"]


def test_login_without_host_stores_the_token_for_the_github_api_url_host(
    cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    with GitHubDouble(token=TOKEN) as gh:
        env = {
            "GITHUB_API_URL": gh.api_url,
            "GITHUB_GRAPHQL_URL": gh.graphql_url,
            "PYTHON_KEYRING_BACKEND": "tests.memory_keyring.MemoryKeyring",
        }
        import keyring.core

        from tests.memory_keyring import MemoryKeyring

        MemoryKeyring.reset()
        monkeypatch.setattr(keyring.core, "_keyring_backend", None, raising=False)
        monkeypatch.setattr("sys.stdin", io.StringIO(TOKEN + "\n"))
        login = cli("auth", "login", "github", extra_env=env)
        assert login.code == 0, login.stderr
        assert gh.host in login.stdout
        step = cli("github", "user", "get", extra_env=env)
        assert step.code == 0, step.stdout + step.stderr


def test_binary_gh_step_gets_its_own_config_and_only_its_token(
    cli, work: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    dump = tmp_path / "dump.json"
    fake = bin_dir / "gh"
    write(
        fake,
        f"#!/usr/bin/env python3\nimport json, os, sys\njson.dump({{'argv': sys.argv, 'env': dict(os.environ)}}, open({str(dump)!r}, 'w'))\n",
    )
    fake.chmod(0o755)
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - binary: gh\n    args: [repo, list]\n"),
    )
    policy = write(tmp_path / "policy.yaml", confinement_lines(tmp_path))  # it records there
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "RUNTIME_GITHUB_TOKEN": TOKEN,
        "AWS_SECRET_ACCESS_KEY": "x",
        "RUNTIME_POLICY_FILE": str(policy),
    }
    result = cli("capability", "execute", "cap.md", extra_env=env)
    assert result.code == 0, result.stdout + result.stderr
    seen = json.loads(dump.read_text())
    assert TOKEN not in " ".join(seen["argv"])
    assert seen["env"]["GH_TOKEN"] == TOKEN
    assert seen["env"]["GH_HOST"] == "github.com"
    # a folder of its own: in the step's private temporary folder when confined
    assert seen["env"]["GH_CONFIG_DIR"].startswith((seen["env"].get("TMPDIR", "/tmp"), "/tmp"))
    assert not Path(seen["env"]["GH_CONFIG_DIR"]).exists()  # removed after the step
    assert "AWS_SECRET_ACCESS_KEY" not in seen["env"]
