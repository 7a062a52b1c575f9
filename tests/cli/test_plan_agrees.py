"""show, plan and preflight say what execute will do: one effect per bound call, the program's
path even when refused, the same exit code for a missing input; and operations that read as
their authors meant (flags are not positionals, ORG from the context, gh found before a run)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import capability, check_schema, write

API_STEPS = """version: v1
inputs:
  method:
    required: true
workflow:
  - provider: github
    args: [api, GET, /repos/acme/app]
  - provider: github
    args: [api, DELETE, /repos/acme/app]
  - provider: github
    args: [api, "${method}", /repos/acme/app]
  - provider: github
    args: [repo, view, acme/app]
"""


def test_show_gives_the_effect_of_the_bound_call(cli, work: Path) -> None:
    write(work / "cap.md", capability(API_STEPS))
    doc = cli("--output", "json", "capability", "show", "cap.md").json()
    check_schema(doc, "capability-show")
    assert [s["effect"] for s in doc["steps"]] == ["read", "destroy", None, "read"]
    assert [s["effects"] for s in doc["steps"]] == [
        ["read"],
        ["destroy"],
        ["read", "write", "destroy"],
        ["read"],
    ]
    text = cli("capability", "show", "cap.md").stdout
    assert "github api GET /repos/acme/app  -> github api [rest, read]" in text
    assert "-> github api [rest, read|write|destroy: depends on input 'method']" in text
    plan = cli("--output", "json", "capability", "plan", "cap.md", "--input", "method=GET").json()
    assert [s["effect"] for s in plan["steps"]] == ["read", "destroy", "read", "read"]


def test_plan_names_the_program_of_a_refused_step(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - binary: git\n    args: [-c, core.pager=less, log]\n"
        ),
    )
    result = cli("capability", "plan", "cap.md", "--verbose")
    assert result.code == 3
    assert "binary: (not found on PATH)" not in result.stdout
    git = next(p for p in os.environ["PATH"].split(os.pathsep) if Path(p, "git").is_file())
    assert f"      binary: {Path(git, 'git')}" in result.stdout
    doc = cli("--output", "json", "capability", "plan", "cap.md").json()
    assert doc["steps"][0]["binary_path"] == str(Path(git, "git"))


def test_a_missing_input_is_exit_2_in_preflight_as_in_plan_and_execute(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability(
            "version: v1\ninputs:\n  folder:\n    required: true\nworkflow:\n"
            '  - provider: files\n    args: [list, "${folder}"]\n'
        ),
    )
    assert cli("capability", "plan", "cap.md").code == 2
    assert cli("capability", "execute", "cap.md").code == 2
    result = cli("capability", "preflight", "cap.md")
    assert result.code == 2, result.stdout
    assert "required input folder is not supplied" in result.stdout
    doc = cli("--output", "json", "capability", "preflight", "cap.md").json()
    check_schema(doc, "preflight")
    assert doc["exit_code"] == 2 and doc["blocking"] == ["input:folder"]
    assert cli("capability", "preflight", "cap.md", "--input", "folder=.").code == 0


# -- operations ----------------------------------------------------------------------------


def test_a_flag_never_binds_as_a_rest_positional(cli, work: Path) -> None:
    # a flag the operation does not declare (gh's --app: REST's issue lists have no such
    # parameter) is refused where it is, never taken as ORG
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: github\n"
            '    args: [issue, list, --app, "dependabot"]\n'
        ),
    )
    doc = cli("--output", "json", "capability", "validate", "cap.md").json()
    found = doc["capabilities"][0]["problems"]
    assert [(p["line"], p["column"], p["code"]) for p in found] == [(9, 25, "flag-argument")]
    assert found[0]["message"].startswith(
        "step 1: '--app' is not a flag of 'issue list' (its flags: --repo, -R, --state"
    )
    assert found[0]["hint"].startswith("its options are key=value: filter, state")
    direct = cli("github", "user", "get", "--state=open")
    assert direct.code == 2
    assert "'--state=open' is a flag" in direct.stderr
    unknown = cli("github", "repo", "view", "-x")
    assert unknown.code == 2 and "known options: none" not in unknown.stderr


def test_team_list_takes_org_from_the_context(cli, work: Path) -> None:
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: github\n    args: [team, list]\n"),
    )
    assert cli("capability", "validate", "cap.md").code == 0
    alone = cli("capability", "plan", "cap.md")
    assert alone.code == 2
    assert "'team list' needs ORG" in alone.stderr
    assert "runtime context set NAME organization=ORG" in alone.stderr
    assert cli("context", "set", "work", "organization=acme").code == 0
    plan = cli("--output", "json", "capability", "plan", "cap.md").json()
    assert "ORG = acme (from context 'work')" in plan["steps"][0]["notes"]


def test_gh_is_found_before_anything_runs(cli, work: Path, tmp_path: Path) -> None:
    empty = tmp_path / "no-gh"
    empty.mkdir()
    write(
        work / "cap.md",
        capability(
            "version: v1\nworkflow:\n  - provider: files\n    args: [write, first.txt, x]\n"
            "  - provider: github\n    args: [pr, list, --repo, acme/app]\n"
        ),
    )
    env = {"PATH": str(empty), "RUNTIME_GITHUB_TOKEN": "ghp_" + "x" * 36}
    result = cli("capability", "execute", "cap.md", extra_env=env)
    assert result.code == 5, result.stdout + result.stderr
    assert "gh" in result.stderr and "nothing ran" in result.stderr
    assert not (work / "first.txt").exists()
    doc = cli("--output", "json", "capability", "preflight", "cap.md", extra_env=env).json()
    gh = next(c for c in doc["checks"] if c["id"] == "binary:gh")
    assert (gh["readiness"], gh["origin"], gh["source"]) == ("False", "inferred", "step 2")
    assert doc["exit_code"] == 5
