"""`runtime agent init` through the CLI: the diff first, writing only with --yes,
idempotence, merging into the user's settings without changing what they wrote, the
AGENTS.md section, and refusing malformed files at their line and column."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tests.conftest import write

FILES = [
    ".mcp.json",
    ".claude/settings.json",
    ".codex/hooks.json",
    ".codex/config.toml",
    ".vscode/mcp.json",
    ".github/hooks/runtime.json",
    ".cursor/mcp.json",
    ".cursor/hooks.json",
    ".gemini/settings.json",
    "AGENTS.md",
]
SERVER = {"command": "runtime", "args": ["mcp", "serve"]}


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_without_yes_it_shows_the_diff_and_writes_nothing(cli, work: Path) -> None:
    for args in ([], ["--dry-run"]):
        result = cli("agent", "init", *args)
        assert result.code == 0, result.stderr
        for path in FILES:
            assert ("--- /dev/null\n+++ b/" + path + "\n") in result.stdout
        assert "nothing written" in result.stderr
        assert snapshot(work) == {}


def test_yes_writes_what_each_assistant_documents(cli, work: Path) -> None:
    result = cli("agent", "init", "--yes")
    assert result.code == 0, result.stderr
    assert "wrote " in result.stderr
    load = lambda p: json.loads((work / p).read_text(encoding="utf-8"))  # noqa: E731
    assert load(".mcp.json") == {"mcpServers": {"runtime": SERVER}}
    assert load(".cursor/mcp.json") == {"mcpServers": {"runtime": SERVER}}
    assert load(".vscode/mcp.json") == {"servers": {"runtime": {"type": "stdio", **SERVER}}}
    assert load(".claude/settings.json") == {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "runtime agent hook claude"}],
                }
            ]
        }
    }
    assert load(".codex/hooks.json")["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    assert load(".cursor/hooks.json") == {
        "version": 1,
        "hooks": {"beforeShellExecution": [{"command": "runtime agent hook cursor"}]},
    }
    gemini = load(".gemini/settings.json")
    assert gemini["mcpServers"] == {"runtime": SERVER}
    [group] = gemini["hooks"]["BeforeTool"]
    assert group["matcher"] == "run_shell_command"
    assert group["hooks"][0]["command"] == "runtime agent hook gemini"
    copilot = load(".github/hooks/runtime.json")
    assert copilot["version"] == 1
    assert copilot["hooks"]["preToolUse"][0]["bash"] == "runtime agent hook copilot"
    codex = tomllib.loads((work / ".codex/config.toml").read_text(encoding="utf-8"))
    assert codex == {"mcp_servers": {"runtime": SERVER}}
    agents = (work / "AGENTS.md").read_text(encoding="utf-8")
    assert agents.startswith("<!-- BEGIN runtime agent init")
    assert "runtime capability list" in agents


def test_it_is_idempotent(cli, work: Path) -> None:
    cli("agent", "init", "--yes")
    first = snapshot(work)
    again = cli("agent", "init", "--yes")
    assert again.code == 0
    assert "nothing to change" in again.stdout
    assert again.stderr == ""
    assert snapshot(work) == first


def test_an_assistant_can_be_chosen(cli, work: Path) -> None:
    result = cli("agent", "init", "--yes", "--assistant", "cursor")
    assert result.code == 0, result.stderr
    assert sorted(snapshot(work)) == sorted([".cursor/mcp.json", ".cursor/hooks.json", "AGENTS.md"])
    wrong = cli("agent", "init", "--assistant", "vim")
    assert wrong.code == 2
    assert "unknown assistant 'vim'" in wrong.stderr


def test_it_merges_keeping_the_users_keys_order_and_values(cli, work: Path) -> None:
    settings = {
        "model": "opus",
        "hooks": {
            "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "lint"}]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "log"}]}],
        },
        "permissions": {"allow": ["Bash(npm test)"]},
    }
    write(work / ".claude/settings.json", json.dumps(settings, indent=4) + "\n")
    write(work / ".mcp.json", json.dumps({"mcpServers": {"runtime": {"command": "mine"}}}))
    write(work / "AGENTS.md", "# Our agents\n\nBe kind.\n")
    result = cli("agent", "init", "--yes", "-a", "claude")
    assert result.code == 0, result.stderr
    # the diff shows the hook added to the user's list, in their indentation
    assert '+            {\n+                "matcher": "Bash",' in result.stdout
    merged = json.loads((work / ".claude/settings.json").read_text(encoding="utf-8"))
    assert list(merged) == ["model", "hooks", "permissions"]
    assert list(merged["hooks"]) == ["PreToolUse", "PostToolUse"]
    assert merged["hooks"]["PreToolUse"][0] == settings["hooks"]["PreToolUse"][0]
    assert merged["hooks"]["PreToolUse"][1]["matcher"] == "Bash"
    assert merged["hooks"]["PostToolUse"] == settings["hooks"]["PostToolUse"]
    assert merged["permissions"] == settings["permissions"]
    # a server the user named runtime stays theirs, and init says so
    assert json.loads((work / ".mcp.json").read_text()) == {
        "mcpServers": {"runtime": {"command": "mine"}}
    }
    assert "kept your mcpServers.runtime as it is" in result.stderr
    agents = (work / "AGENTS.md").read_text(encoding="utf-8")
    assert agents.startswith("# Our agents\n\nBe kind.\n\n<!-- BEGIN runtime agent init")


def test_the_agents_md_section_is_replaced_and_the_rest_kept(cli, work: Path) -> None:
    cli("agent", "init", "--yes", "-a", "claude")
    path = work / "AGENTS.md"
    text = path.read_text(encoding="utf-8")
    edited = "# Intro\n\n" + text.replace("runtime capability list", "EDITED") + "\n## After\n"
    path.write_text(edited, encoding="utf-8")
    result = cli("agent", "init", "--yes", "-a", "claude")
    assert result.code == 0
    assert "-EDITED" not in result.stdout  # the diff shows the section restored
    again = path.read_text(encoding="utf-8")
    assert again == "# Intro\n\n" + text + "\n## After\n"


def test_a_malformed_file_is_refused_at_its_line_and_column(cli, work: Path) -> None:
    write(work / ".claude/settings.json", '{\n  "hooks": {\n    "PreToolUse": [,]\n  }\n}\n')
    before = snapshot(work)
    result = cli("agent", "init", "--yes")
    assert result.code == 2
    assert ".claude/settings.json:3:20: the file is not valid JSON" in result.stderr
    assert "nothing was written" in result.stderr
    assert snapshot(work) == before  # not even the files that were fine


def test_other_malformed_files_are_refused_too(cli, work: Path) -> None:
    write(work / ".codex/config.toml", 'model = "gpt"\n[mcp_servers\n')
    result = cli("agent", "init", "--yes", "-a", "codex")
    assert result.code == 2
    assert ".codex/config.toml:2:" in result.stderr
    assert "not valid TOML" in result.stderr
    (work / ".codex/config.toml").unlink()
    write(work / ".gemini/settings.json", '{"hooks": []}\n')
    result = cli("agent", "init", "--yes", "-a", "gemini")
    assert result.code == 2
    assert "hooks is not a JSON object" in result.stderr
    write(work / ".gemini/settings.json", "[]\n")
    assert "not a JSON object" in cli("agent", "init", "-a", "gemini").stderr
    (work / ".gemini/settings.json").unlink()
    from runtime.agent.setup import BEGIN

    write(work / "AGENTS.md", f"# A\n{BEGIN}\nno end\n")
    result = cli("agent", "init", "--yes", "-a", "cursor")
    assert result.code == 2
    assert "AGENTS.md:2:1: the markers of runtime's section" in result.stderr
    assert not (work / ".cursor").exists()


def test_a_codex_config_gets_the_table_appended(cli, work: Path) -> None:
    write(work / ".codex/config.toml", 'model = "gpt-5"  # ours\n')
    result = cli("agent", "init", "--yes", "-a", "codex")
    assert result.code == 0, result.stderr
    text = (work / ".codex/config.toml").read_text(encoding="utf-8")
    assert text.startswith('model = "gpt-5"  # ours\n\n[mcp_servers.runtime]\n')
    assert cli("agent", "init", "-a", "codex").stdout.endswith("nothing to change\n")
