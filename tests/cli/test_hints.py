"""Hints that can be followed (issue 20, items 10 and 15.4).

A hint says what to do about *this* failure: never a way out that does not
exist (a user policy cannot lift a denied binary), never the cause of another
failure (an over-long argument is not a missing program), never a variable
that is not set; and one mistake gets one problem with its hint, not a
cascade of follow-on errors.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, capability, write

DEFAULT_ALLOWED = "cat, date, echo, false, gh, git, grep, head, jq, ls, pwd, tail, true, uname, wc"


@pytest.mark.parametrize("binary", ["rm", "python3", "python3.11", "sed"])
def test_a_denied_binary_is_never_offered_a_user_policy(
    cli: Callable[..., Result], work: Path, binary: str
) -> None:
    path = write(
        work / "denied.md",
        capability(f"version: v1\nworkflow:\n  - binary: {binary}\n    args: [x]\n"),
    )
    for args in (["capability", "validate", str(path)], ["capability", "execute", str(path)]):
        result = cli(*args)
        assert result.code == 2, result.stdout + result.stderr
        text = result.stdout + result.stderr
        assert f"step 1: binary '{binary}' is denied by the policy" in text
        assert "a user policy can allow more" not in text
        assert "a denied binary is never run, whatever a user policy allows" in text
    direct = cli("command", "run", binary, "x")
    assert direct.code == 3
    assert f"refused by denied_binaries: {binary.rstrip('.0123456789')}" in direct.stderr
    assert "a user policy can allow more" not in direct.stderr
    assert "a denied binary is never run, whatever a user policy allows" in direct.stderr


def test_a_binary_that_is_only_unlisted_can_be_allowed_by_a_user_policy(
    cli: Callable[..., Result], work: Path
) -> None:
    path = write(
        work / "sort.md", capability("version: v1\nworkflow:\n  - binary: sort\n    args: [x]\n")
    )
    result = cli("capability", "validate", str(path))
    assert result.code == 2
    assert "step 1: binary 'sort' is not in allowed_binaries" in result.stdout
    assert (
        f"hint: allowed: {DEFAULT_ALLOWED}; a user policy can allow more "
        "(allowed_binaries in policy.yaml)" in result.stdout
    )
    direct = cli("command", "run", "sort", "x")
    assert direct.code == 3
    assert (
        "a user policy can allow more binaries (allowed_binaries in policy.yaml)" in direct.stderr
    )


def test_an_argument_over_the_system_limit_is_not_a_missing_program(
    cli: Callable[..., Result], work: Path
) -> None:
    path = write(
        work / "big.md",
        capability(
            "version: v1\ninputs:\n  x:\n    required: true\n"
            'workflow:\n  - binary: echo\n    args: ["${x}"]\n'
        ),
    )
    write(work / "big.txt", "a" * 200_000)  # over Linux's 128 KiB for one argument
    result = cli("capability", "execute", str(path), "--input", "x=@big.txt")
    assert result.code == 1, result.stdout + result.stderr
    assert "Argument list too long" in result.stderr
    assert "hint: the arguments are too long for one program start" in result.stderr
    assert "installed" not in result.stdout + result.stderr


def test_a_broken_home_policy_never_mentions_runtime_policy_file(
    cli: Callable[..., Result], home: Path, tmp_path: Path
) -> None:
    policy = home / "policy.yaml"
    write(policy, "allowed_binaries: [\n")
    syntax = cli("policy", "show")
    assert syntax.code == 2, syntax.stdout + syntax.stderr
    assert f"{policy}:2:1: error: YAML syntax error" in syntax.stderr
    assert "RUNTIME_POLICY_FILE" not in syntax.stderr

    policy.write_bytes(b"allowed_binaries: [\xff]\n")
    for args in (["policy", "show"], ["doctor"]):
        result = cli(*args)
        assert result.code in (2, 5), result.stdout + result.stderr
        text = result.stdout + result.stderr
        assert f"{policy}:1:20: the policy file is not UTF-8 text (byte 0xff)" in text
        assert f"fix {policy}" in text
        assert "RUNTIME_POLICY_FILE" not in text

    # a symbolic link to nothing is a broken policy, not no policy
    policy.unlink()
    policy.symlink_to(tmp_path / "gone.yaml")
    dangling = cli("policy", "show")
    assert dangling.code == 2, dangling.stdout
    assert (
        f"error: policy file {policy} is a symbolic link to {tmp_path / 'gone.yaml'}, "
        "which does not exist" in dangling.stderr
    )
    assert "RUNTIME_POLICY_FILE" not in dangling.stderr

    # named by the variable, the variable is one way out
    named = tmp_path / "named.yaml"
    named.write_bytes(b"allowed_binaries: [\xff]\n")
    explicit = cli("policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(named)})
    assert explicit.code == 2
    assert f"hint: fix {named}, or unset RUNTIME_POLICY_FILE" in explicit.stderr


def test_an_unknown_spec_lists_the_specs(cli: Callable[..., Result]) -> None:
    result = cli("capability", "spec", "nope")
    assert result.code == 2
    assert "error: no spec named 'nope'" in result.stderr
    assert "bootstrap" not in result.stderr
    assert (
        "hint: specs: files, github, policy (`runtime capability spec NAME`); "
        "`runtime capability spec` prints the authoring reference" in result.stderr
    )


@pytest.mark.parametrize(
    "step",
    [
        "  - command: echo hi\n",
        "  - command: [echo, hi]\n    args: [x]\n",
        "  - capability: other\n",
    ],
)
def test_a_retired_step_key_is_one_error_with_its_hint(
    cli: Callable[..., Result], work: Path, step: str
) -> None:
    path = write(work / "retired.md", capability("version: v1\nworkflow:\n" + step))
    result = cli("-o", "json", "capability", "validate", str(path))
    assert result.code == 2
    [problem] = result.json()["capabilities"][0]["problems"]
    assert problem["code"] == "unknown-key"
    assert problem["hint"]
    text = cli("capability", "validate", str(path)).stdout
    assert "has no 'args'" not in text
    assert "sets neither" not in text


def test_steps_instead_of_workflow_is_one_error(cli: Callable[..., Result], work: Path) -> None:
    path = write(
        work / "steps.md",
        capability("version: v1\nsteps:\n  - provider: files\n    args: [list, .]\n"),
    )
    result = cli("-o", "json", "capability", "validate", str(path))
    assert result.code == 2
    [problem] = result.json()["capabilities"][0]["problems"]
    assert problem["message"] == "'steps' is not a key: it is 'workflow'"


def test_an_unreadable_capability_says_what_to_do(
    cli: Callable[..., Result], work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    import runtime.document.loader as loader

    write(work / "cap.md", capability("version: v1\nworkflow: []\n"))

    def denied(path: Path, limit: int | None = None, **_: object) -> bytes:
        # mode 000 stops no root process, and the tests may run as root
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    monkeypatch.setattr(loader, "read_file", denied)
    for command in ("validate", "execute"):
        result = cli("capability", command, "cap.md")
        assert result.code == 2
        text = result.stdout + result.stderr
        assert "cap.md:1:1: error: cannot read the file: Permission denied" in text
        assert "hint: runtime reads it as the user it runs as" in text, text


INPUT_CAP = capability(
    "version: v1\ninputs:\n  note:\n    required: true\n"
    "workflow:\n  - provider: files\n    args: [write, out.txt, '${note}']\n"
)


def test_an_input_file_over_1_mib_says_what_to_do(cli: Callable[..., Result], work: Path) -> None:
    write(work / "cap.md", INPUT_CAP)
    (work / "big.txt").write_bytes(b"a" * (1024 * 1024 + 1))
    result = cli("capability", "execute", "cap.md", "--input", "note=@big.txt")
    assert result.code == 2
    assert "--input note=@big.txt: the file is larger than 1 MiB" in result.stderr
    assert "hint: pass the file's path as the input instead" in result.stderr
    assert not (work / "out.txt").exists()


def test_an_input_file_not_utf8_says_where_and_what_to_do(
    cli: Callable[..., Result], work: Path
) -> None:
    write(work / "cap.md", INPUT_CAP)
    (work / "latin1.txt").write_bytes("ok\ncafé\n".encode("latin-1"))
    result = cli("capability", "execute", "cap.md", "--input", "note=@latin1.txt")
    assert result.code == 2
    assert "the file is not UTF-8 text: latin1.txt:2:4 holds the byte 0xe9" in result.stderr
    assert "hint: an input is text: save the file as UTF-8" in result.stderr
    assert not (work / "out.txt").exists()
