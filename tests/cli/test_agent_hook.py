"""`runtime agent hook ASSISTANT` through the console script, as an assistant runs it:
recorded events of each assistant (tests/data/agent_hooks/), the protocol's output,
the tricky quoting, the policy's filters, failing closed, and the audit record of
every decision."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_audit_log import records
from tests.conftest import REPO, Result, write

FIXTURES = REPO / "tests" / "data" / "agent_hooks"
ASSISTANTS = ("claude", "codex", "copilot", "cursor", "gemini")


def fixture(assistant: str, name: str, cwd: Path) -> dict[str, Any]:
    text = (FIXTURES / f"{assistant}.json").read_text(encoding="utf-8")
    event = json.loads(text.replace("CWD", str(cwd)))[name]
    assert event is not None
    return event


def with_command(assistant: str, event: dict[str, Any], command: str) -> dict[str, Any]:
    event = json.loads(json.dumps(event))
    if assistant == "cursor":
        event["command"] = command
    elif assistant == "copilot":
        event["toolArgs"] = json.dumps({"command": command})
    else:
        event["tool_input"]["command"] = command
    return event


def hook(cli_proc: Any, assistant: str, stdin: str | dict[str, Any], **kw: Any) -> Result:
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    return cli_proc("agent", "hook", assistant, input=text, **kw)


def decision(assistant: str, result: Result) -> tuple[str, str]:
    """(allow | deny | none, the reason said to the assistant) from the hook's output,
    read as the assistant's protocol reads it."""
    assert result.code == 0, result.stderr
    if not result.stdout.strip():
        return "none", ""
    doc = json.loads(result.stdout)
    if assistant in ("claude", "codex"):
        out = doc["hookSpecificOutput"]
        assert out["hookEventName"] == "PreToolUse"
        return out["permissionDecision"], out.get("permissionDecisionReason", "")
    if assistant == "cursor":
        return doc["permission"], doc.get("agent_message", "")
    if assistant == "gemini":
        return doc["decision"], doc.get("reason", "")
    return doc["permissionDecision"], doc.get("permissionDecisionReason", "")


def hook_records(home: Path) -> list[dict[str, Any]]:
    return [r for r in records(home) if r["event"] == "agent.hook"]


@pytest.mark.parametrize("assistant", ASSISTANTS)
def test_a_recorded_runtime_command_is_allowed_as_the_protocol_says(
    cli_proc, work: Path, home: Path, assistant: str
) -> None:
    event = fixture(assistant, "allowed", work)
    result = hook(cli_proc, assistant, event)
    said, _ = decision(assistant, result)
    # Codex and Copilot honour only deny: their "no objection" is no output at all
    assert said == ("none" if assistant in ("codex", "copilot") else "allow")
    [record] = hook_records(home)
    assert record["assistant"] == assistant
    assert record["decision"] == "allow"
    assert record["command"].startswith("runtime ")
    assert record["cwd"] == str(work)


@pytest.mark.parametrize("assistant", ASSISTANTS)
def test_a_recorded_other_command_is_denied_with_what_to_run_instead(
    cli_proc, work: Path, home: Path, assistant: str
) -> None:
    result = hook(cli_proc, assistant, fixture(assistant, "denied", work))
    said, reason = decision(assistant, result)
    assert said == "deny"
    assert reason.startswith("runtime agent hook refused this command: ")
    assert " Instead: " in reason
    [record] = hook_records(home)
    assert record["decision"] == "deny"
    assert record["rule"] in ("not-runtime", "chain")
    if assistant == "cursor":
        assert json.loads(result.stdout)["user_message"].startswith("runtime agent hook")


def test_the_denial_names_the_runtime_command_that_does_the_job(cli_proc, work: Path) -> None:
    _, reason = decision("claude", hook(cli_proc, "claude", fixture("claude", "denied", work)))
    assert "`runtime github pr list --state open`" in reason
    event = with_command("claude", fixture("claude", "allowed", work), "cat notes.txt")
    _, reason = decision("claude", hook(cli_proc, "claude", event))
    assert "runtime files read PATH" in reason
    event = with_command("claude", fixture("claude", "allowed", work), "git status")
    _, reason = decision("claude", hook(cli_proc, "claude", event))
    assert "`runtime command run git status`" in reason
    assert "the policy allows" in reason and "git" in reason


@pytest.mark.parametrize("assistant", ["claude", "codex", "copilot", "gemini"])
def test_another_tools_call_gets_no_decision_and_no_record(
    cli_proc, work: Path, home: Path, assistant: str
) -> None:
    result = hook(cli_proc, assistant, fixture(assistant, "other_tool", work))
    assert decision(assistant, result) == ("none", "")
    assert hook_records(home) == []


def test_copilots_pascal_case_event_is_read_too(cli_proc, work: Path, home: Path) -> None:
    result = hook(cli_proc, "copilot", fixture("copilot", "pascal_case", work))
    assert decision("copilot", result) == ("none", "")
    assert hook_records(home)[0]["decision"] == "allow"


# command -> the rule that refuses it (None: allowed)
TRICKY = [
    ('runtime files read "$(cat ~/.ssh/id_rsa)"', "substitution"),
    ("runtime files read `id`", "substitution"),
    ("runtime files read <(ls)", "substitution"),
    # one argument, `list;rm`, that runtime refuses: the shell runs no rm
    ("runtime capability list\\;rm", None),
    ("runtime capability list\nrm -rf build", "chain"),
    ("runtime capability list \\\n  --help", None),
    ("runtime files read $'a\\x3brm'", "quoting"),
    ("runtime files read $HOME/.netrc", "expansion"),
    ("runtime files read ${HOME}", "expansion"),
    ("runtime version $((1+2))", "expansion"),
    ("env runtime version", "not-runtime"),
    ("/usr/local/bin/runtime version", "not-runtime"),
    ("./runtime version", "not-runtime"),
    ("'runtime' version", "not-runtime"),
    ("\\runtime version", "not-runtime"),
    ("command runtime version", "not-runtime"),
    ("runtime version; rm -rf build", "chain"),
    ("runtime version && rm -rf build", "chain"),
    ("runtime version || rm -rf build", "chain"),
    ("runtime version &", "chain"),
    ("(runtime version)", "construct"),
    ("runtime files write a.txt <<EOF\nhi\nEOF", "heredoc"),
    ("runtime files write a.txt <<< hi", "heredoc"),
    ("runtime version > /tmp/out.txt", "redirect"),
    ("runtime version > ../out.txt", "redirect"),
    ("runtime version > .git/config", "redirect"),
    ("runtime version > .claude/settings.json", "redirect"),
    ("runtime version < /etc/passwd", "redirect"),
    ("runtime -o json version > out.json 2>&1", None),
    ("runtime version 2>/dev/null", None),
    ("RUNTIME_POLICY_FILE=/tmp/lax.yaml runtime version", "variable"),
    ("RUNTIME_HOME=/tmp/h runtime version", "variable"),
    ("GH_TOKEN=ghp_0123456789abcdefghij0123456789abcdef runtime github user get", "variable"),
    ("PATH=/tmp/bin runtime version", "variable"),
    ("NO_COLOR=1 RUNTIME_OUTPUT=json runtime version", None),
    ("runtime files read 'my notes.txt'", None),
    ('runtime files write a.txt "it is \\"quoted\\" here"', None),
    ("runtime files read *(e:'rm -rf ~':)", "parse"),
    ("runtime version | jq .version", None),
    ("runtime version | jq -n env", "filter"),
    ("runtime version | jq '\"\\(env.GH_TOKEN)\"'", "filter"),
    ("runtime version | jq '$ENV'", "filter"),
    ("runtime version | jq -r .env", None),
    ("runtime version | jq --rawfile k /etc/passwd .", "filter"),
    ("runtime version | grep -i runtime | head -n 1", None),
    ("runtime version | grep -r token /", "filter"),
    ("runtime version | grep token secrets.txt", "filter"),
    ("runtime version | grep to*en", "expansion"),
    ("runtime version | sed -n 1p", "filter"),
    ("runtime version | sh", "filter"),
    ("runtime version | wc -l", "filter"),
    ("runtime version | GREP_OPTIONS=-r grep x", "variable"),
    ("", "empty"),
    ("   ", "empty"),
    ("runtime version |", "parse"),
]


@pytest.mark.parametrize(("command", "rule"), TRICKY, ids=[c for c, _ in TRICKY])
def test_tricky_commands_are_decided_by_the_shell_grammar(
    cli_proc, work: Path, home: Path, command: str, rule: str | None
) -> None:
    event = with_command("claude", fixture("claude", "allowed", work), command)
    said, reason = decision("claude", hook(cli_proc, "claude", event))
    [record] = hook_records(home)
    if rule is None:
        assert said == "allow", reason
        assert record["decision"] == "allow"
    else:
        assert said == "deny"
        assert record["rule"] == rule, record
        assert " Instead: " in reason


@pytest.mark.parametrize("assistant", ASSISTANTS)
@pytest.mark.parametrize(
    ("stdin", "why"),
    [
        ("", "the hook got no input"),
        ("{not json", "is not JSON (at 1:2"),
        ("[1, 2]", "is not a JSON object"),
    ],
)
def test_empty_or_malformed_input_is_denied(
    cli_proc, home: Path, assistant: str, stdin: str, why: str
) -> None:
    said, reason = decision(assistant, hook(cli_proc, assistant, stdin))
    assert said == "deny"
    assert why in reason
    [record] = hook_records(home)
    assert record["rule"] == "malformed"


@pytest.mark.parametrize("assistant", ["claude", "codex", "gemini", "cursor", "copilot"])
def test_a_shell_call_without_its_command_is_denied(cli_proc, work: Path, assistant: str) -> None:
    event = fixture(assistant, "allowed", work)
    if assistant == "cursor":
        del event["command"]
    elif assistant == "copilot":
        event["toolArgs"] = "{}"
    else:
        del event["tool_input"]["command"]
    said, reason = decision(assistant, hook(cli_proc, assistant, event))
    assert said == "deny"
    assert "has no string 'command'" in reason


def test_an_unknown_assistant_is_a_usage_error_that_blocks(cli_proc) -> None:
    result = cli_proc("agent", "hook", "vim", input="{}")
    # exit 2 is "block" to the assistants that read exit codes
    assert result.code == 2
    assert result.stdout == ""
    assert "unknown assistant 'vim'" in result.stderr
    assert "claude, codex, copilot, cursor, gemini" in result.stderr


def test_the_policy_lists_the_filters(cli_proc, work: Path, home: Path) -> None:
    policy = write(home / "policy.yaml", "version: v1\nagents:\n  shell_filters: [wc]\n")
    os.chmod(policy, 0o600)
    event = fixture("claude", "allowed", work)
    wc = with_command("claude", event, "runtime capability list | wc -l")
    jq = with_command("claude", event, "runtime capability list | jq .")
    assert decision("claude", hook(cli_proc, "claude", wc))[0] == "allow"
    said, reason = decision("claude", hook(cli_proc, "claude", jq))
    assert said == "deny"
    assert "pipe only into wc" in reason
    # the policy changes: the next decision reads it again
    policy.write_text("version: v1\nagents:\n  shell_filters: [jq]\n", encoding="utf-8")
    assert decision("claude", hook(cli_proc, "claude", jq))[0] == "allow"
    assert decision("claude", hook(cli_proc, "claude", wc))[0] == "deny"
    # RUNTIME_POLICY_FILE names another policy: the guard reads that one
    other = write(work / "team.yaml", "version: v1\nagents:\n  shell_filters: []\n")
    os.chmod(other, 0o600)
    said, reason = decision(
        "claude", hook(cli_proc, "claude", jq, extra_env={"RUNTIME_POLICY_FILE": str(other)})
    )
    assert said == "deny"
    assert "the policy lists no filters" in reason


def test_a_refused_policy_denies_every_command_naming_the_file(
    cli_proc, work: Path, home: Path
) -> None:
    policy = write(home / "policy.yaml", "version: v1\nagents:\n  shell_filters: [sed]\n")
    os.chmod(policy, 0o600)
    event = with_command("claude", fixture("claude", "allowed", work), "runtime version")
    said, reason = decision("claude", hook(cli_proc, "claude", event))
    assert said == "deny"
    assert f"{policy}:3:19" in reason
    assert hook_records(home)[0]["rule"] == "policy"
    os.chmod(policy, 0o666)
    policy.write_text("version: v1\n", encoding="utf-8")
    said, reason = decision("claude", hook(cli_proc, "claude", event))
    assert said == "deny"
    assert "can be written by anyone" in reason


def test_a_decision_that_cannot_be_recorded_is_a_denial(
    cli_proc, work: Path, tmp_path: Path
) -> None:
    blocked = write(tmp_path / "file", "not a folder\n")
    event = with_command("claude", fixture("claude", "allowed", work), "runtime version")
    said, reason = decision(
        "claude", hook(cli_proc, "claude", event, extra_env={"RUNTIME_HOME": str(blocked)})
    )
    assert said == "deny"
    assert "cannot be recorded" in reason


def test_secrets_never_reach_the_audit_record(cli_proc, work: Path, home: Path) -> None:
    token = "ghp_" + "Zq9" * 12
    env_secret = "s3cr3t-value-of-the-environment"
    event = fixture("claude", "allowed", work)
    commands = [
        f"GH_TOKEN={token} runtime github user get",
        f"runtime files write a.txt {env_secret}",
        f"curl -H 'Authorization: token {token}' https://api.github.com/user",
    ]
    for command in commands:
        hook(
            cli_proc,
            "claude",
            with_command("claude", event, command),
            extra_env={"MY_API_TOKEN": env_secret},
        )
    log = (home / "audit" / "audit.jsonl").read_text(encoding="utf-8")
    assert token not in log
    assert env_secret not in log
    assert log.count("[REDACTED]") >= 3


def test_the_same_command_through_typer_decides_the_same(cli_proc, work: Path) -> None:
    event = fixture("claude", "denied", work)
    early = hook(cli_proc, "claude", event)
    through = cli_proc("--log-level", "error", "agent", "hook", "claude", input=json.dumps(event))
    assert through.code == 0
    assert json.loads(through.stdout) == json.loads(early.stdout)
    helped = cli_proc("agent", "hook", "--help")
    assert helped.code == 0
    assert "ASSISTANT" in helped.stdout
