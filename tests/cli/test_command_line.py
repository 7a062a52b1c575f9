"""How the command line reads: global options where people type them, did-you-mean,
usage lines, help on a bare group, and the words of the summaries (issue 20, 9 and 12)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_ecosystem import complete
from tests.conftest import Result, capability, write

Cli = Callable[..., Result]

LIST_STEP = "version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"


# -- 9. global options after the command ----------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        ["capability", "show", "cap.md", "--output", "json"],
        ["capability", "show", "cap.md", "-o", "json"],
        ["capability", "show", "cap.md", "--output=json"],
        ["capability", "show", "-ojson", "cap.md"],
        ["-o", "text", "capability", "show", "cap.md", "-o", "json"],  # the later one wins
    ],
)
def test_output_is_accepted_after_the_command(cli: Cli, work: Path, line: list[str]) -> None:
    write(work / "cap.md", capability(LIST_STEP))
    result = cli(*line)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["name"] == "cap"


def test_a_failure_after_the_command_is_reported_in_the_format_asked_for(cli: Cli) -> None:
    result = cli("capability", "show", "nope", "-o", "json")
    assert result.code == 2
    assert json.loads(result.stdout)["error"]["code"] == "not-found"
    text = cli("-o", "json", "capability", "show", "nope", "-o", "text")
    assert text.code == 2
    assert text.stdout == ""
    assert "no capability named 'nope'" in text.stderr


def test_a_provider_call_takes_output_after_its_words(cli: Cli, work: Path) -> None:
    write(work / "a.txt", "x")
    result = cli("files", "list", ".", "-o", "json")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["ok"] is True


def test_after_the_binary_every_argument_is_the_binaries(cli: Cli) -> None:
    passed = cli("command", "run", "echo", "hi", "-o", "json", "--timeout", "3")
    assert passed.code == 0, passed.stderr
    assert "hi -o json --timeout 3" in passed.stdout
    ours = cli("command", "run", "-o", "json", "echo", "hi")
    assert ours.code == 0, ours.stderr
    assert json.loads(ours.stdout)["ok"] is True


def test_a_bad_output_value_is_a_usage_error_wherever_it_is(cli: Cli) -> None:
    for line in (["-o", "xml", "version"], ["capability", "list", "-o", "xml"]):
        result = cli(*line)
        assert result.code == 2, line
        assert "'xml' is not one of: text, json, raw" in result.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_output_values_complete(env: dict[str, str], work: Path, shell: str) -> None:
    assert complete(env, work, shell, "runtime -o ") == ["text", "json", "raw"]
    assert complete(env, work, shell, "runtime --output j") == ["json"]
    assert complete(env, work, shell, "runtime capability list -o ") == ["text", "json", "raw"]


# -- 9. did you mean ------------------------------------------------------------------------


def test_a_misspelled_command_gets_a_suggestion(cli: Cli) -> None:
    top = cli("capabilty", "list")
    assert top.code == 2
    assert "No such command 'capabilty'. Did you mean 'capability'?" in top.stderr
    sub = cli("capability", "exeucte", "x")
    assert sub.code == 2
    assert "Did you mean 'execute'?" in sub.stderr
    option = cli("capability", "execute", "x", "--inptu", "a=b")
    assert option.code == 2
    assert "No such option: --inptu" in option.stderr
    assert "did you mean '--input'? run `runtime capability execute --help`" in option.stderr
    root = cli("--outptu", "json", "policy", "show")
    assert root.code == 2 and "did you mean '--output'? run `runtime --help`" in root.stderr
    far = cli("capability", "validate", "--zzzz", "x")
    assert far.code == 2 and "did you mean" not in far.stderr
    assert "run `runtime capability validate --help`" in far.stderr


def test_a_misspelled_operation_gets_a_suggestion(cli: Cli, work: Path) -> None:
    direct = cli("github", "isue", "list")
    assert direct.code == 2
    assert "did you mean 'issue list'?" in direct.stderr
    nothing_close = cli("github", "xyz")
    assert nothing_close.code == 2
    assert "did you mean" not in nothing_close.stderr
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [reed, a.txt]\n"),
    )
    validated = cli("capability", "validate", "cap.md")
    assert validated.code == 2
    assert "did you mean 'read'?" in validated.stdout + validated.stderr


# -- an operation's own help ----------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_an_operation_has_its_own_help(cli: Cli, flag: str) -> None:
    result = cli("github", "repo", "list", flag)
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("runtime github repo list: ")
    assert "Usage: runtime github repo list [ORG] [OPTION=value...]" in lines
    assert re.search(r"Effect:\s+read", result.stdout)
    assert "per_page=1..100" in result.stdout and "limit=1.." in result.stdout
    assert "default: the context's organization" in result.stdout
    assert "issue list" not in result.stdout  # only this operation
    assert result.stderr == ""


def test_help_after_arguments_and_for_pass_through_operations(cli: Cli) -> None:
    files = cli("files", "write", "a.txt", "--help")
    assert files.code == 0 and "Usage: runtime files write PATH CONTENT" in files.stdout
    gh = cli("github", "pr", "create", "--help")  # not passed to gh: nothing runs
    assert gh.code == 0
    assert "Flags: passed to gh as written (`gh pr create --help` lists them)" in gh.stdout


def test_operation_help_in_json_and_for_unknown_words(cli: Cli) -> None:
    result = cli("-o", "json", "github", "repo", "view", "--help")
    assert result.code == 0
    document = json.loads(result.stdout)
    assert document["operation"]["words"] == ["repo", "view"]
    assert document["operation"]["form"] == "repo view OWNER/REPO [OPTION=value...]"
    # the start of some operations' words: the provider's help, which lists them
    partial = cli("github", "repo", "--help")
    assert partial.code == 0 and "OPERATION" in partial.stdout and "repo view" in partial.stdout


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_for_a_misspelled_operation_is_refused_with_a_suggestion(cli: Cli, flag: str) -> None:
    # as `runtime capability valdate --help` and the call itself are: exit 2, did you mean
    for words, meant in ((["files", "reed"], "read"), (["github", "repo", "lst"], "repo list")):
        result = cli(*words, flag)
        assert result.code == 2, result.stdout
        assert result.stdout == ""
        assert f"error: '{' '.join(words[1:])}' is not an operation of '{words[0]}'" in (
            result.stderr
        )
        assert f"did you mean '{meant}'? run `runtime {words[0]} --help`" in result.stderr
    unknown = cli("-o", "json", "github", "nope", flag)
    assert unknown.code == 2
    assert unknown.json()["error"]["message"] == "'nope' is not an operation of 'github'"


# -- 12. help and usage ---------------------------------------------------------------------

GROUPS = ["capability", "command", "policy", "audit", "auth", "context", "mcp"]
LEAVES = [
    ["capability", "validate"],
    ["capability", "execute"],
    ["capability", "dependents"],
    ["capability", "spec"],
    ["context", "use"],
    ["context", "set"],
    ["context", "show"],
    ["auth", "login"],
    ["command", "run"],
    ["policy", "check"],
    ["mcp", "serve"],
    ["doctor"],
]


def test_a_bare_runtime_prints_its_help(cli: Cli) -> None:
    result = cli()
    assert result.code == 0
    assert result.stderr == ""
    assert result.stdout.startswith("Usage: runtime [OPTIONS] COMMAND [ARGS]...")
    assert "capability" in result.stdout


@pytest.mark.parametrize(
    "options", [["-o", "json"], ["--output", "text"], ["--log-level", "debug"], ["-o", "raw"]]
)
def test_runtime_with_only_global_options_prints_its_help(cli_proc, options: list[str]) -> None:
    # as a bare group does with the same options (`runtime -o json capability`), not
    # "Missing command" and exit 2
    bare = cli_proc()
    result = cli_proc(*options)
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == bare.stdout
    assert cli_proc(*options, "capability").code == 0


@pytest.mark.parametrize("group", GROUPS)
def test_a_bare_group_prints_its_help(cli: Cli, group: str) -> None:
    result = cli(group)
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith(f"Usage: runtime {group} [OPTIONS] COMMAND [ARGS]...")


@pytest.mark.parametrize("words", [[g] for g in GROUPS] + LEAVES)
def test_usage_lines_name_arguments_as_click_does(cli: Cli, words: list[str]) -> None:
    result = cli(*words, "--help")
    assert result.code == 0, result.stderr
    usage = result.stdout.splitlines()[0]
    assert usage.startswith(f"Usage: runtime {' '.join(words)} ")
    assert not re.search(r"[{}]", usage), usage
    assert "--install-completion" not in result.stdout  # only on `runtime --help`


@pytest.mark.parametrize(
    ("words", "usage"),
    [
        (["capability", "execute"], "Usage: runtime capability execute [OPTIONS] NAME"),
        (["context", "show"], "Usage: runtime context show [OPTIONS] [NAME]"),
        (["context", "set"], "Usage: runtime context set [OPTIONS] PAIRS..."),
        (["capability", "validate"], "Usage: runtime capability validate [OPTIONS] TARGETS..."),
        (["command", "run"], "Usage: runtime command run [OPTIONS] BINARY [ARGS]..."),
    ],
)
def test_usage_lines(cli: Cli, words: list[str], usage: str) -> None:
    assert cli(*words, "--help").stdout.splitlines()[0] == usage


def test_completion_options_are_offered_once(cli: Cli) -> None:
    assert "--install-completion" in cli("--help").stdout


def test_a_commands_help_lists_the_output_option(cli: Cli) -> None:
    assert "-o, --output" in cli("capability", "execute", "--help").stdout


# -- 12. words ------------------------------------------------------------------------------


def test_validate_counts_in_words(cli: Cli, work: Path) -> None:
    write(work / "bad.md", capability("version: v1\nworkflow:\n  - provider: files\n"))
    result = cli("capability", "validate", "bad.md")
    assert result.code == 2
    assert "1 checked: 0 valid, 1 invalid (1 error, 0 warnings)" in result.stdout


def test_one_applied_step_is_a_step_that_stays(cli: Cli, work: Path) -> None:
    steps = (
        "version: v1\nworkflow:\n"
        "  - provider: files\n    args: [write, a.txt, x]\n"
        "  - binary: 'false'\n    args: []\n"
    )
    write(work / "cap.md", capability(steps))
    result = cli("capability", "execute", "cap.md")
    assert result.code == 1
    text = result.stdout + result.stderr
    assert "step 1 stays applied" in text, text
    assert "steps 1 stay" not in text


def test_lineage_of_one_step_says_step(cli: Cli, work: Path) -> None:
    text = "# X\n\n## Lineage\n\n- `a/b` — step 1\n\n```runtime\n" + LIST_STEP + "```\n"
    write(work / "x.md", text)
    shown = cli("capability", "show", "x.md")
    assert shown.code == 0, shown.stderr
    assert "  a/b (step 1)" in shown.stdout


def test_plan_says_which_rule_allowed_a_step(cli: Cli, work: Path) -> None:
    write(work / "cap.md", capability(LIST_STEP))
    result = cli("capability", "plan", "cap.md", "--verbose")
    assert result.code == 0, result.stderr
    assert "policy: allowed [no denied_operations entry matches]" in result.stdout
    assert "allowed by" not in result.stdout
    assert "1 step planned; nothing was run" in result.stdout


def test_log_options_are_accepted_after_the_command_too(cli: Cli, work: Path) -> None:
    write(work / "cap.md", capability(LIST_STEP))
    after = cli("capability", "show", "cap.md", "--log-level", "debug", "--log-format", "json")
    assert after.code == 0, after.stderr
    events = [json.loads(line) for line in after.stderr.splitlines()]
    assert "station.entered" in {e["event"] for e in events}
    quiet = cli("--log-level", "debug", "capability", "show", "cap.md", "--log-level", "off")
    assert quiet.code == 0
    assert quiet.stderr == ""
    bad = cli("capability", "show", "cap.md", "--log-level", "loud")
    assert bad.code == 2
    assert "--log-level 'loud' is not one of" in bad.stderr


@pytest.mark.parametrize("flag", ["--install-completion", "--show-completion"])
def test_a_shell_completion_does_not_know_is_refused(
    cli: Callable[..., Result], tmp_path: Path, flag: str
) -> None:
    home = tmp_path / "user-home"
    home.mkdir()
    result = cli(flag, "tcsh", extra_env={"HOME": str(home), "SHELL": "/bin/bash"})
    assert result.code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"error: Invalid value for '{flag}': 'tcsh' is not one of 'bash', 'zsh', 'fish'"
    )
    assert list(home.iterdir()) == []
    assert "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION" not in os.environ
