"""`capability validate` and the policy: what plan and execute would refuse is said before
a commit, and a folder with nothing to check is said too."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO, capability, check_schema, write

REFUSED = """version: v1
inputs:
  remote:
    required: true
  sub:
    required: true
  target:
    required: true
  method:
    required: true
workflow:
  - binary: git
    args: [push, --force, origin, main]
  - provider: files
    args: [delete, old.txt]
  - provider: github
    args: [api, DELETE, /repos/acme/app]
  - binary: git
    args: [push, --force, "${remote}"]
  - provider: files
    args: [delete, "${target}"]
  - binary: git
    args: ["${sub}"]
  - provider: github
    args: [api, "${method}", /repos/acme/app]
  - binary: git
    args: [status]
"""


def problems(doc: dict) -> list[tuple[int, str, str, str]]:
    return [
        (p["line"], p["severity"], p["code"], p["message"])
        for p in doc["capabilities"][0]["problems"]
    ]


def test_what_the_policy_refuses_is_a_warning_and_an_error_with_strict(cli, work: Path) -> None:
    write(work / "cap.md", capability(REFUSED))
    result = cli("--output", "json", "capability", "validate", "cap.md")
    doc = result.json()
    check_schema(doc, "validate")
    assert result.code == 0 and doc["ok"], doc
    found = problems(doc)
    # steps 1-5 are refused whatever the inputs; 6 and 7 depend on an input's value
    # (a subcommand, a method), so they are decided at plan time; 8 is allowed
    assert [line for line, *_ in found] == [18, 20, 22, 24, 26], found
    assert {(sev, code) for _, sev, code, _ in found} == {("warning", "policy-refused")}
    messages = [m for *_, m in found]
    assert messages[0] == (
        "step 1 (git push --force origin main) would be refused by denied_arguments: "
        "git push --force (default): the arguments contain a denied run"
    )
    assert "effect destroy (allowed_destructive)" in messages[1]
    assert "effect destroy (allowed_destructive)" in messages[2]
    assert messages[3].startswith(
        "step 4 (git push --force ${remote}) would be refused, whatever the inputs, by "
        "denied_arguments: git push --force"
    )
    assert "whatever the inputs" not in messages[0]
    assert "files delete ${target}" in messages[4]

    strict = cli("--output", "json", "capability", "validate", "--strict", "cap.md")
    sdoc = strict.json()
    check_schema(sdoc, "validate")
    assert strict.code == 2 and not sdoc["ok"]
    assert {sev for _, sev, _, _ in problems(sdoc)} == {"error"}

    text = cli("capability", "validate", "cap.md")
    assert "cap.md:18:" in text.stdout and "warning: step 1 (git push --force" in text.stdout
    assert "`runtime capability plan`" in text.stdout  # the hint says what will happen


def test_plan_agrees_with_what_validate_said(cli, work: Path) -> None:
    write(work / "cap.md", capability(REFUSED))
    inputs = ["remote=origin", "sub=status", "target=a.txt", "method=GET"]
    plan = cli(
        "--output",
        "json",
        "capability",
        "plan",
        "cap.md",
        *[a for i in inputs for a in ("--input", i)],
    ).json()
    refused = [s["index"] for s in plan["steps"] if not s["decision"]["allowed"]]
    assert refused == [1, 2, 3, 4, 5]


def test_the_pre_commit_hook_stops_a_refused_step(cli, work: Path) -> None:
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    entry = next(
        line.split(":", 1)[1].strip()
        for line in hooks.splitlines()
        if line.strip().startswith("entry:")
    )
    args = entry.split()[1:]
    write(
        work / "push.md",
        capability("version: v1\nworkflow:\n  - binary: git\n    args: [push, --force]\n"),
    )
    write(
        work / "clean.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [delete, a.txt]\n"),
    )
    result = cli(*args, "push.md", "clean.md")
    assert result.code == 2
    assert result.stdout.splitlines()[:2] == [
        "push.md:9:12: error: step 1 (git push --force) would be refused by denied_arguments: "
        "git push --force (default): the arguments contain a denied run",
        "clean.md:9:12: error: step 1 (files delete a.txt) would be refused by effect destroy "
        "(allowed_destructive): 'files delete' destroys what it names, and no "
        "allowed_destructive entry lists it",
    ]


def test_a_user_policy_that_allows_it_makes_it_valid(cli, work: Path, tmp_path: Path) -> None:
    policy = write(tmp_path / "policy.yaml", "allowed_destructive: ['files delete']\n")
    write(
        work / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [delete, a.txt]\n"),
    )
    env = {"RUNTIME_POLICY_FILE": str(policy)}
    result = cli("capability", "validate", "--strict", "cap.md", extra_env=env)
    assert result.code == 0, result.stdout
    assert "0 warnings" in result.stdout


def test_validate_help_says_what_it_checks(cli) -> None:
    text = " ".join(cli("capability", "validate", "--help").stdout.split())
    for phrase in (
        "closed grammar",
        "providers",
        "allowed_binaries",
        "policy would refuse",
        "whatever the inputs",
        "--strict",
    ):
        assert phrase in text, phrase


# -- nothing to check ------------------------------------------------------------------------


def test_an_empty_folder_is_nothing_found(cli, work: Path) -> None:
    (work / "empty").mkdir()
    result = cli("capability", "validate", "empty")
    assert result.code == 2
    assert "0 checked" not in result.stdout
    assert "error: no capability found in empty" in result.stderr
    doc = cli("--output", "json", "capability", "validate", "empty").json()
    assert doc["ok"] is False and doc["exit_code"] == 2
    assert doc["error"]["code"] == "not-found"


def test_a_folder_of_plain_markdown_is_nothing_found(cli, work: Path) -> None:
    write(work / "docs" / "README.md", "# Notes\n")
    result = cli("capability", "validate", "docs")
    assert result.code == 2
    assert "no capability found in docs (1 Markdown file without a runtime block)" in (
        result.stderr
    )
    # with a capability beside it, the folder is not empty
    write(
        work / "docs" / "cap.md",
        capability("version: v1\nworkflow:\n  - provider: files\n    args: [list, .]\n"),
    )
    assert cli("capability", "validate", "docs").code == 0


def test_files_given_by_pre_commit_without_a_capability_pass(cli, work: Path) -> None:
    write(work / "README.md", "# Notes\n")
    result = cli("capability", "validate", "--only-capabilities", "README.md")
    assert result.code == 0
    assert "nothing to check" in result.stdout
