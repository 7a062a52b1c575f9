"""A third provider is one package plus an entry point (tests/plugins/).

The installed ``runtime`` runs in a child process with tests/plugins on
PYTHONPATH, where ``runtime_echo_provider-0.1.dist-info`` registers
``echo_provider:PROVIDER`` in the ``runtime.providers`` group. Nothing in the
engine knows it: help, validation, plan, execution, its credential (redacted,
from its own variable), its context setting and its scaffold all come from
what it declares.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, Result, capability, write

PLUGINS = REPO / "tests" / "plugins"


@pytest.fixture
def run(cli_proc: Callable[..., Result]) -> Callable[..., Result]:
    path = os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))

    def call(*args: str, extra_env: dict[str, str] | None = None) -> Result:
        return cli_proc(*args, extra_env={"PYTHONPATH": path, **(extra_env or {})})

    return call


def test_the_provider_is_found_and_publishes_its_operations(run: Callable[..., Result]) -> None:
    listed = run("--help")
    assert listed.code == 0 and "echo" in listed.stdout
    help_text = run("echo", "--help")
    assert help_text.code == 0, help_text.stderr
    assert "say TEXT" in help_text.stdout and "Print TEXT" in help_text.stdout


def test_a_capability_of_the_third_provider_validates_plans_and_runs(
    run: Callable[..., Result], work: Path
) -> None:
    body = (
        "version: v1\ninputs:\n  text:\n    required: true\nworkflow:\n"
        '  - provider: echo\n    args: [say, "${text}", times=2]\n'
    )
    write(work / "cap.md", capability(body))
    assert run("capability", "validate", "cap.md").code == 0
    plan = run("--output", "json", "capability", "plan", "cap.md", "--input", "text=hi")
    assert plan.code == 0, plan.stderr
    (step,) = plan.json()["steps"]
    assert (step["provider"], step["operation"], step["effect"]) == ("echo", "say", "read")
    done = run("--output", "json", "capability", "execute", "cap.md", "--input", "text=hi")
    assert done.code == 0, done.stdout + done.stderr
    assert done.json()["steps"][0]["output"] == "hi\nhi"
    bad = "version: v1\nworkflow:\n  - provider: echo\n    args: [shout, x]\n"
    write(work / "bad.md", capability(bad))
    invalid = run("capability", "validate", "bad.md")
    assert invalid.code == 2 and "'shout x' is not an operation of 'echo'" in invalid.stdout


def test_its_credential_setting_and_scaffold_come_from_its_declaration(
    run: Callable[..., Result], work: Path
) -> None:
    token = "echo-token-" + "7" * 20
    said = run("echo", "secret", extra_env={"ECHO_TOKEN": token})
    assert said.code == 0, said.stderr
    assert token not in said.stdout and "[REDACTED]" in said.stdout
    missing = run("echo", "secret")
    assert missing.code == 4
    assert "ECHO_TOKEN" in missing.stdout + missing.stderr
    assert run("context", "set", "w", "greeting=hello").code == 0
    greeted = run("echo", "say", "world")
    assert "hello world" in greeted.stdout
    refused = run("context", "set", "w", "github_token=x")
    assert refused.code == 2 and "unknown context key" in refused.stderr
    made = run("capability", "new", "greet", "--provider", "echo")
    assert made.code == 0, made.stderr
    assert "provider: echo" in (work / "capabilities" / "greet.md").read_text()


def test_a_value_its_declaration_refuses_is_a_usage_error_not_a_bug(
    run: Callable[..., Result], work: Path
) -> None:
    """The option's declared type refuses what the provider could not take, at its place,
    as the built-in providers' options do: never an internal error in execute."""
    typed = run("echo", "say", "hi", "times=x")
    assert typed.code == 2, typed.stdout + typed.stderr
    assert "times" in typed.stderr and "internal error" not in typed.stderr
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: echo\n    args: [say, hi, times=0]\n"),
    )
    checked = run("capability", "validate", "cap.md")
    assert checked.code == 2, checked.stdout + checked.stderr
    assert "cap.md:" in checked.stdout + checked.stderr
