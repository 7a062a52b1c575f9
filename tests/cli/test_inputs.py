"""Inputs that cannot go silently wrong (issue 29): an optional input left out is said
wherever it stays literal, an empty required one and a name with spaces are refused, and
a refusal quoting a file's lines stays one line per refusal."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import capability, check_schema, write

# service is required, team optional: step 2 leaves ${team} literal when it is left out
DOCS = capability(
    "version: v1\n"
    "inputs:\n"
    "  service:\n"
    "    required: true\n"
    "  team:\n"
    "    description: the owning team\n"
    "workflow:\n"
    "  - provider: files\n"
    '    args: [mkdir, "${service}"]\n'
    "  - provider: files\n"
    '    args: [write, "${service}/README.md", "owned by ${team}"]\n'
)
TEAM = "docs.md:10:3"  # where `team:` is declared


def _docs(work: Path) -> None:
    write(work / "docs.md", DOCS)


# -- an optional input left out -------------------------------------------------------


def test_validate_says_where_an_optional_input_stays_literal_as_information(
    cli, work: Path
) -> None:
    _docs(work)
    result = cli("capability", "validate", "docs.md")
    assert result.code == 0, result.stderr
    assert (
        f"{TEAM}: info: optional input 'team': unless supplied, '${{team}}' stays literal "
        "in step 2" in result.stdout
    )
    # information, not a warning: the summary counts none
    assert "(0 errors, 0 warnings)" in result.stdout
    github = cli("capability", "validate", "--format", "github", "docs.md")
    assert "::notice file=docs.md,line=10,col=3,title=unsupplied-input::" in github.stdout
    doc = cli("--output", "json", "capability", "validate", "docs.md").json()
    check_schema(doc, "validate")
    [problem] = doc["capabilities"][0]["problems"]
    assert (problem["severity"], problem["code"]) == ("info", "unsupplied-input")


def test_plan_and_dry_run_warn_of_an_optional_input_left_out(cli, work: Path) -> None:
    _docs(work)
    for args in (["plan", "docs.md"], ["execute", "docs.md", "--dry-run"]):
        result = cli("capability", *args, "--input", "service=billing")
        assert result.code == 0, result.stdout + result.stderr
        assert (
            f"{TEAM}: warning: optional input 'team' is not supplied: '${{team}}' stays "
            "literal in step 2" in result.stdout
        )
        doc = cli("--output", "json", "capability", *args, "--input", "service=billing").json()
        check_schema(doc, "plan")
        assert [w["code"] for w in doc["warnings"]] == ["unsupplied-input"]
    # supplied, even empty, it is no longer left out
    given = cli("capability", "plan", "docs.md", "--input", "service=b", "--input", "team=")
    assert given.code == 0 and "unsupplied" not in given.stdout + given.stderr
    assert "stays literal" not in given.stdout


def test_execute_warns_on_stderr_and_in_its_document(cli, work: Path) -> None:
    _docs(work)
    result = cli("capability", "execute", "docs.md", "--input", "service=billing")
    assert result.code == 0, result.stderr
    assert (
        f"{TEAM}: warning: optional input 'team' is not supplied: '${{team}}' stays literal "
        "in step 2" in result.stderr
    )
    assert (work / "billing" / "README.md").read_text() == "owned by ${team}\n"
    doc = cli(
        "--output", "json", "capability", "execute", "docs.md", "--input", "service=b2"
    ).json()
    check_schema(doc, "execute")
    [warning] = doc["warnings"]
    assert warning["code"] == "unsupplied-input" and "'team'" in warning["message"]


def test_strict_refuses_an_optional_input_left_out(cli, work: Path) -> None:
    _docs(work)
    for extra in ([], ["--dry-run"]):
        result = cli(
            "capability", "execute", "docs.md", "--strict", *extra, "--input", "service=billing"
        )
        assert result.code == 2, result.stdout + result.stderr
        assert f"{TEAM}: error: optional input 'team' is not supplied" in result.stderr
        assert "--strict refuses to leave it literal" in result.stderr
        assert not (work / "billing").exists()
    doc = cli(
        "--output", "json", "capability", "execute", "docs.md", "--strict", "--input", "service=b"
    ).json()
    check_schema(doc, "error")
    assert doc["error"]["code"] == "unsupplied-input"
    supplied = cli(
        "capability", "execute", "docs.md", "--strict", "--input", "service=b", "--input", "team=x"
    )
    assert supplied.code == 0, supplied.stderr


# -- values and names that are not what was meant -------------------------------------


def test_an_empty_required_input_is_refused_naming_it(cli, work: Path) -> None:
    _docs(work)
    for command in (["plan"], ["execute"], ["execute", "--dry-run"]):
        result = cli("capability", *command, "docs.md", "--input", "service=")
        assert result.code == 2, result.stdout + result.stderr
        assert "required input 'service' is empty" in result.stderr
        # what an arg built from it would have become
        assert "step 2's '${service}/README.md' would be '/README.md'" in result.stderr
        assert "--input service=VALUE" in result.stderr
    assert list(work.iterdir()) == [work / "docs.md"]


def test_a_name_with_spaces_around_it_is_refused_showing_them(cli, work: Path) -> None:
    _docs(work)
    result = cli("capability", "plan", "docs.md", "--input", "service = billing")
    assert result.code == 2
    assert "--input 'service '=...: the input name has white space after it" in result.stderr
    assert "write no spaces around '=': --input service=billing" in result.stderr
    assert "unknown input" not in result.stderr
    before = cli("capability", "plan", "docs.md", "--input", " service=billing")
    assert before.code == 2 and "' service'=...: the input name has white space before it" in (
        before.stderr
    )
    # a secret's value is not quoted back
    secret = cli("capability", "plan", "docs.md", "--input", "api_token = hunter2")
    assert secret.code == 2 and "hunter2" not in secret.stderr
    assert "--input api_token=VALUE" in secret.stderr


# -- a refusal that quotes a file -----------------------------------------------------


def test_six_refusals_quoting_a_multi_line_file_are_six_lines(cli, work: Path) -> None:
    steps = "".join(
        '  - binary: git\n    args: [push, --force, origin, "${body}"]\n' for _ in range(6)
    )
    write(
        work / "six.md",
        capability(f"version: v1\ninputs:\n  body:\n    required: true\nworkflow:\n{steps}"),
    )
    notes = "".join(f"line {n} of the notes \x1b[31m in red\n" for n in range(40))
    write(work / "notes.txt", notes)
    result = cli("capability", "execute", "six.md", "--input", "body=@notes.txt")
    assert result.code == 3
    lines = result.stderr.splitlines()
    assert lines[0] == "error: 6 steps refused by policy; nothing ran:"
    refusals = [line for line in lines if line.startswith("  step ")]
    assert [line.split()[1] for line in refusals] == ["1", "2", "3", "4", "5", "6"]
    for line in refusals:
        # the file's first line, escaped, and a cut where the rest would be
        assert "git push --force origin line 0 of the notes \\x1b[31m in red\\nline 1" in line
        assert "...) refused by denied_arguments: git push --force" in line
        assert len(line) < 400
    assert "\x1b" not in result.stderr and "line 39" not in result.stderr
    assert "`runtime capability plan CAP --output json` shows each step's args whole" in (
        result.stderr
    )
    # there, whole
    plan = cli("--output", "json", "capability", "plan", "six.md", "--input", "body=@notes.txt")
    assert plan.json()["steps"][5]["args"][-1] == notes
    doc = json.loads(
        cli(
            "--output", "json", "capability", "execute", "six.md", "--input", "body=@notes.txt"
        ).stdout
    )
    assert doc["error"]["message"].count("\n") == 6  # the heading, then one line each


def test_a_reason_quoting_a_file_keeps_its_end_on_one_line(cli, work: Path) -> None:
    steps = "".join('  - provider: files\n    args: [write, "/etc/${body}", x]\n' for _ in range(6))
    write(
        work / "six.md",
        capability(f"version: v1\ninputs:\n  body:\n    required: true\nworkflow:\n{steps}"),
    )
    write(work / "notes.txt", "".join(f"line {n}\n" for n in range(30)))
    result = cli("capability", "execute", "six.md", "--input", "body=@notes.txt")
    assert result.code == 3
    refusals = [line for line in result.stderr.splitlines() if line.startswith("  step ")]
    assert len(refusals) == 6
    for line in refusals:
        # the reason's end names the root it protects
        assert line.endswith(f"outside the write root {work}"), line
        assert len(line) < 800
