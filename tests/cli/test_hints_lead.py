"""Hints that lead somewhere (issue 29, item 5).

Each hint is followed as a user would: the `{` of an unquoted `${x}` in a flow list is
named, a path to the allowed git runs as git, a misspelling gets the name meant (once),
a user policy entry the safety floor overrides is said wherever the policy is loaded,
and the policy file's format is where users look. api's `--jq` hint is followed against
the GitHub double in tests/integration/test_github_api_bodies.py.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, Result, capability, check_schema, write


def test_an_unquoted_reference_in_a_flow_list_names_the_brace(
    cli: Callable[..., Result], work: Path
) -> None:
    body = "version: v1\ninputs:\n  x:\n    required: true\nworkflow:\n  - binary: echo\n    args: [${x}]\n"
    path = write(work / "flow.md", capability(body))
    result = cli("capability", "validate", str(path))
    assert result.code == 2
    assert "but got '{'" in result.stdout
    assert (
        "hint: an unquoted '{' starts a mapping inside [...]: quote the value, "
        'as in ["${name}"]' in result.stdout
    )
    assert "quote values that contain ',' or ']'" not in result.stdout
    fixed = write(work / "flow.md", capability(body.replace("[${x}]", '["${x}"]')))
    assert cli("capability", "validate", str(fixed)).code == 0


def test_a_path_to_the_allowed_binary_runs_as_it_and_another_says_why_not(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    real = os.path.realpath(git)  # /usr/bin/git, whatever link PATH goes through
    ran = cli("command", "run", real, "--version")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("git version")
    assert "not in allowed_binaries" not in ran.stderr
    # the same file by a link is the same binary: decided, run and hardened as git
    link = tmp_path / "bin" / "git"
    link.parent.mkdir()
    link.symlink_to(real)
    assert cli("command", "run", str(link), "--version").code == 0
    # a copy is another file: refused, saying why and what to do
    copy = tmp_path / "other" / "git"
    copy.parent.mkdir()
    shutil.copy(real, copy)
    refused = cli("command", "run", str(copy), "--version")
    assert refused.code == 3
    assert f"{copy} is not the git found on PATH, the one allowed_binaries allows" in refused.stderr
    assert f"hint: run it by its name, git; for that file, put {copy.parent} first on PATH" in (
        refused.stderr
    )
    # in a capability a binary is a name: the hint names the one to write
    path = write(
        work / "path.md", capability(f"version: v1\nworkflow:\n  - binary: {real}\n    args: [x]\n")
    )
    validated = cli("capability", "validate", str(path))
    assert validated.code == 2
    assert "hint: write 'git': an allowed binary is named" in validated.stdout


def test_a_misspelled_binary_subcommand_or_key_gets_the_name_meant_once(
    cli: Callable[..., Result], work: Path
) -> None:
    typed = cli("command", "run", "gti", "status")
    assert typed.code == 3
    assert "hint: did you mean 'git'? a user policy can allow more" in typed.stderr
    sub = cli("command", "run", "git", "stauts")
    assert sub.code == 3
    assert "hint: did you mean 'status'? allowed: add," in sub.stderr
    body = (
        "version: v1\ninput:\n  x:\n    required: true\nworkflow:\n"
        "  - binary: gti\n    args: [log]\n"
        "  - provder: files\n    args: [list, .]\n"
        "  - binary: git\n    args: [stauts]\n"
    )
    path = write(work / "typos.md", capability(body))
    result = cli("-o", "json", "capability", "validate", "--strict", str(path))
    assert result.code == 2
    found = {
        (p["message"], p["hint"].split("?")[0])
        for p in result.json()["capabilities"][0]["problems"]
    }
    assert found == {
        ("unknown key 'input' in the runtime block", "did you mean 'inputs'"),
        ("step 1: binary 'gti' is not in allowed_binaries", "did you mean 'git'"),
        ("unknown key 'provder' in step 2", "did you mean 'provider'"),
        (
            "step 3 (git stauts) would be refused by allowed_subcommands: git: 'stauts' is not "
            "an allowed git subcommand (an alias or an unknown command is never run)",
            "did you mean 'status'",
        ),
    }
    # `provder` is one problem: not also "step 2 sets neither 'provider' nor 'binary'"
    assert "sets neither" not in cli("capability", "validate", str(path)).stdout


FLOOR = "allowed_binaries: [sort, python3, python3.11]\nallowed_subcommands:\n  gh: [secret]\n"


def test_a_user_policy_entry_the_floor_overrides_is_said_wherever_the_policy_is_loaded(
    cli: Callable[..., Result], work: Path, home: Path
) -> None:
    policy = write(home / "policy.yaml", FLOOR)
    said = (
        f"{policy}:1:26: warning: allowed_binaries entry 'python3' has no effect: the safety "
        "floor overrides it (denied_binaries of the default policy lists python3)",
        f"{policy}:1:35: warning: allowed_binaries entry 'python3.11' has no effect: the "
        "safety floor overrides it (denied_binaries of the default policy lists python, which "
        "covers python3.11)",
        f"{policy}:3:8: warning: allowed_subcommands entry 'gh secret' has no effect: the "
        "safety floor overrides it (denied_arguments of the default policy refuses every "
        "`gh secret`)",
    )
    path = write(
        work / "ok.md", capability("version: v1\nworkflow:\n  - binary: echo\n    args: [hi]\n")
    )
    for args in (
        ["policy", "show"],
        ["-o", "json", "policy", "show"],
        ["capability", "validate", str(path)],
        ["capability", "execute", str(path)],
        ["-o", "raw", "command", "run", "echo", "hi"],
        ["files", "list", "."],
    ):
        result = cli(*args)
        assert result.code == 0, (args, result.stderr)
        for line in said:
            assert line in result.stderr, (args, result.stderr)
        assert "hint: remove it from allowed_binaries in this file" in result.stderr
        assert "sort" not in result.stderr  # an entry that does allow something is no warning
    doc = cli("-o", "json", "policy", "show").json()
    check_schema(doc, "policy")
    assert [(w["line"], w["code"]) for w in doc["policy"]["warnings"]] == [
        (1, "policy-floor"),
        (1, "policy-floor"),
        (3, "policy-floor"),
    ]
    # still in force: python3 is never run
    assert cli("command", "run", "python3", "-c", "1").code == 3


def test_the_policy_file_format_is_documented_where_users_look(
    cli: Callable[..., Result], home: Path
) -> None:
    from runtime.plan.policy_file import POLICY_SCHEMA

    spec = cli("policy", "spec")
    assert spec.code == 0, spec.stderr
    assert spec.stdout == (home / "specs" / "policy.md").read_text(encoding="utf-8")
    assert spec.stdout == (REPO / "specs" / "policy.md").read_text(encoding="utf-8")
    assert cli("capability", "spec", "policy").stdout == spec.stdout
    # every key the policy file may hold has its row, and the safety floor is explained
    for key in POLICY_SCHEMA.fields:
        assert f"\n| `{key}` |" in spec.stdout, key
    assert "safety floor" in spec.stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "\n## The policy\n" in readme and "`runtime policy spec`" in readme
    default = (REPO / "policies" / "default.yaml").read_text(encoding="utf-8")
    assert "runtime policy spec" in default
