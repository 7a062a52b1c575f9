"""The policy's agents section (what `runtime mcp serve` offers an assistant), through
`runtime policy show`: its defaults, a user file's keys replacing them, and its
problems at their positions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import check_schema, write


def policy(tmp_path: Path, text: str) -> dict[str, str]:
    path = write(tmp_path / "policy.yaml", "version: v1\n" + text)
    path.chmod(0o600)
    return {"RUNTIME_POLICY_FILE": str(path)}


def agents(cli: Any, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = cli("--output", "json", "policy", "show", extra_env=env)
    assert result.code == 0, result.stderr
    check_schema(result.json(), "policy")
    found: dict[str, Any] = result.json()["policy"]["agents"]
    return found


def test_the_default_offers_the_catalog_reads_and_asks_before_writes(cli) -> None:
    assert agents(cli) == {
        "capabilities": {"value": ["*"], "source": "default"},
        "execute_own_text": {"value": False, "source": "default"},
        "operations": {"value": "read", "source": "default"},
        "confirm": {"value": ["write", "destroy"], "source": "default"},
        "shell_filters": {"value": ["jq", "head", "grep"], "source": "default"},
    }
    text = cli("policy", "show").stdout
    assert "agents (what an assistant is offered through `runtime mcp serve`, and" in text
    assert "    confirm: write, destroy  [default]" in text


def test_each_key_of_a_user_file_replaces_the_default(cli, tmp_path: Path) -> None:
    env = policy(tmp_path, "agents:\n  capabilities: [github/*]\n  confirm: []\n")
    source = env["RUNTIME_POLICY_FILE"]
    shown = agents(cli, env)
    assert shown["capabilities"] == {"value": ["github/*"], "source": source}
    assert shown["confirm"] == {"value": [], "source": source}  # narrowed to none
    assert shown["operations"] == {"value": "read", "source": "default"}
    assert "    confirm: (none)  [" in cli("policy", "show", extra_env=env).stdout


def test_a_misspelled_key_or_an_unknown_effect_is_refused_where_it_is(cli, tmp_path: Path) -> None:
    env = policy(tmp_path, "agents:\n  operation: write\n")
    result = cli("policy", "show", extra_env=env)
    assert result.code == 2
    assert f"{env['RUNTIME_POLICY_FILE']}:3:3: error: unknown key 'operation' of agents" in (
        result.stderr
    )
    assert "did you mean 'operations'?" in result.stderr
    env = policy(tmp_path, "agents:\n  operations: everything\n")
    result = cli("policy", "show", extra_env=env)
    assert result.code == 2
    assert f"{env['RUNTIME_POLICY_FILE']}:3:15:" in result.stderr
    assert "read, write or destroy" in result.stderr
