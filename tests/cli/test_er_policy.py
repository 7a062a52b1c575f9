"""Engineering Runtime policy files (schema_version 3) where a runtime policy is, mapped key
by key, narrowing the shipped default and never widening it; ``runtime policy import``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, Result, check_schema, require_tool, write
from tests.github_double import GitHubDouble

# our own ER policy, in the shape of ER's CI policy: a short list of binaries, git rules,
# roots, edit bounds and a provider denial
ER_POLICY = """\
# ER policy for our CI
schema_version: 3

allowed_binaries:
  - git
  - gh
  - bash      # the floor denies it: no effect

command_policy:
  denied_binaries: [wget]
  rules:
    git:
      denied:
        - tag -d
        - push --tags
  admitted_helpers:
    git: [/usr/lib/git-core/git-credential-store]

file_policy:
  read_roots: ["."]
  write_roots: ["./out"]
  max_edit_files: 10
  max_edit_batch_bytes: 65536
  max_edit_matches: 50
  max_edit_diff_bytes: 4096
  max_edit_seconds: 5

providers:
  files:
    denied: [delete]
  github:
    denied: [repo create]
"""


@pytest.fixture
def er_file(tmp_path: Path) -> Path:
    return write(tmp_path / "policy.yaml", ER_POLICY)


@pytest.fixture
def under(cli: Callable[..., Result], er_file: Path) -> Callable[..., Result]:
    """``runtime`` with RUNTIME_POLICY_FILE naming the ER file."""

    def run(*args: str, extra_env: dict[str, str] | None = None) -> Result:
        return cli(*args, extra_env={"RUNTIME_POLICY_FILE": str(er_file), **(extra_env or {})})

    return run


def _show(result: Result) -> dict[str, Any]:
    assert result.code == 0, result.stderr
    doc = result.json()
    check_schema(doc, "policy")
    return dict(doc["policy"])


# -- accepted where a runtime policy is ------------------------------------------------------


def test_allowed_binaries_is_the_whole_list(under: Callable[..., Result], er_file: Path) -> None:
    require_tool("git", "git runs under the ER policy's list")
    assert under("command", "run", "git", "--version").code == 0
    # jq is in runtime's default list, not in ER's: refused before anything runs
    refused = under("-o", "json", "command", "run", "jq", "--version")
    assert refused.code == 3, refused.stdout
    doc = refused.json()
    assert doc["status"] == "refused"
    assert doc["error"]["message"].startswith(
        f"step 1 (jq --version) refused by only_binaries ({er_file}): "
    )
    assert doc["error"]["message"].endswith("; nothing ran")
    text = under("command", "run", "jq", "--version")
    assert (
        f"binary 'jq' is not among the binaries {er_file} lets run at most (git, gh, bash: "
        "its only_binaries)"
    ) in text.stderr
    assert "allowed_binaries of an Engineering Runtime policy" in text.stderr


def test_its_rules_and_denials_are_runtimes(
    under: Callable[..., Result], er_file: Path, work: Path
) -> None:
    require_tool("git", "the rules are git's")
    tagged = under("command", "run", "git", "tag", "-d", "v1")
    assert tagged.code == 3
    assert f"denied_arguments: git tag -d ({er_file})" in tagged.stderr
    write(work / "notes.txt", "keep\n")
    delete = under("files", "delete", "notes.txt")
    assert delete.code == 3 and f"denied_operations: files delete ({er_file})" in delete.stderr
    assert (work / "notes.txt").exists()
    # write roots: ./out only; read roots: the working folder
    (work / "out").mkdir()
    assert under("files", "write", "out/report.txt", "ok").code == 0
    outside = under("files", "write", "report.txt", "no")
    assert outside.code == 3 and "write root" in outside.stderr
    assert under("files", "read", "notes.txt").stdout == "keep\n"


def test_a_provider_denial_refuses_before_any_request(
    under: Callable[..., Result], er_file: Path
) -> None:
    with GitHubDouble(token="rt-er-policy-token-" + "z" * 16) as gh:
        result = under("github", "repo", "create", "name=demo", extra_env=gh.runtime_env())
        assert result.code == 3, result.stderr
        assert f"denied_operations: github repo create ({er_file})" in result.stderr
        assert gh.requests == []


def test_policy_show_has_each_mapped_value_with_the_er_file_as_source(
    under: Callable[..., Result], er_file: Path
) -> None:
    result = under("-o", "json", "policy", "show")
    doc = _show(result)
    source = str(er_file)
    assert doc["sources"] == ["default", source]
    assert doc["only_binaries"] == {"value": ["git", "gh", "bash"], "source": source}
    assert sorted(b["name"] for b in doc["allowed_binaries"]) == ["bash", "gh", "git"]
    assert {"name": "wget", "source": "default"} in doc["denied_binaries"]  # already denied
    assert {"binary": "git", "run": ["push", "--tags"], "source": source} in doc["denied_arguments"]
    assert {
        "binary": "git",
        "path": "/usr/lib/git-core/git-credential-store",
        "source": source,
    } in doc["admitted_helpers"]
    assert doc["write_roots"] == {"value": ["./out"], "source": source}
    assert doc["file_edits"]["max_files"] == {"value": 10, "source": source}
    assert doc["file_edits"]["max_seconds"] == {"value": 5, "source": source}
    assert doc["allowed_destructive"] == []  # delete is denied, so not granted
    # the floor's override is said, at its position in the ER file
    (warning,) = doc["warnings"]
    assert (warning["line"], warning["column"], warning["severity"]) == (7, 5, "warning")
    assert "allowed_binaries entry 'bash' has no effect" in warning["message"]
    text = under("policy", "show")
    assert f"only_binaries (nothing else runs): git, gh, bash  [{source}]" in text.stdout
    assert f"{er_file}:7:5: warning: allowed_binaries entry 'bash'" in text.stderr


def test_homes_policy_yaml_may_be_an_er_file(cli: Callable[..., Result], home: Path) -> None:
    write(home / "policy.yaml", ER_POLICY)
    doc = _show(cli("-o", "json", "policy", "show"))
    assert doc["only_binaries"]["source"] == str(home / "policy.yaml")


def test_er_write_roots_allow_delete_unless_a_provider_denial_says_otherwise(
    cli: Callable[..., Result], work: Path, tmp_path: Path
) -> None:
    er = write(
        tmp_path / "er.yaml",
        'schema_version: 3\nfile_policy:\n  read_roots: ["."]\n  write_roots: ["./out"]\n',
    )
    env = {"RUNTIME_POLICY_FILE": str(er)}
    write(work / "out" / "old.txt", "x\n")
    write(work / "kept.txt", "x\n")
    assert cli("files", "delete", "out/old.txt", extra_env=env).code == 0
    assert not (work / "out" / "old.txt").exists()
    outside = cli("files", "delete", "kept.txt", extra_env=env)
    assert outside.code == 3 and (work / "kept.txt").exists()
    doc = _show(cli("-o", "json", "policy", "show", extra_env=env))
    assert doc["allowed_destructive"] == [{"operation": "files delete", "source": str(er)}]
    # without file_policy the default's refusal of a delete stands
    bare = write(tmp_path / "bare.yaml", "schema_version: 3\n")
    refused = cli("files", "delete", "out/kept.txt", extra_env={"RUNTIME_POLICY_FILE": str(bare)})
    assert refused.code == 3 and "allowed_destructive" in refused.stderr


# -- narrows, never widens ---------------------------------------------------------------------


def test_the_floor_holds_whatever_the_er_file_allows(under: Callable[..., Result]) -> None:
    refused = under("command", "run", "bash", "-c", "true")
    assert refused.code == 3
    assert "denied_binaries: bash (default)" in refused.stderr


def test_a_bound_above_the_default_is_an_error_at_its_value(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    er = write(tmp_path / "er.yaml", "schema_version: 3\nfile_policy:\n  max_edit_files: 500\n")
    result = cli("policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(er)})
    assert result.code == 2
    assert (
        f"{er}:3:19: error: file_policy.max_edit_files is 500, above runtime's 100 "
        "(file_edits.max_files of the default policy): a policy file narrows the bounds on "
        "an edit, never widens them"
    ) in result.stderr
    assert "Traceback" not in result.stderr


# -- what cannot be honoured -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "position", "said"),
    [
        ("schema_version: 2\n", "1:17", "schema_version 2 is not one runtime reads"),
        (
            "schema_version: 3\nnetwork_policy: {}\n",
            "2:1",
            "'network_policy' has no runtime counterpart, so it cannot be honoured",
        ),
        (
            "schema_version: 3\ncommand_policy:\n  rules:\n    git:\n      allowed: [status]\n",
            "5:7",
            "'command_policy.rules.git.allowed' has no runtime counterpart",
        ),
        (
            "schema_version: 3\nfile_policy:\n  max_edit_widgets: 3\n",
            "3:3",
            "'file_policy.max_edit_widgets' has no runtime counterpart",
        ),
        (
            "schema_version: 3\nproviders:\n  gitlab:\n    denied: [merge]\n",
            "4:5",
            "providers.gitlab: no provider named 'gitlab' is installed",
        ),
        (
            "schema_version: 3\nproviders:\n  github:\n    denied: [repositories create]\n",
            "4:14",
            "providers.github.denied entry 'repositories create' names no github operation",
        ),
        (
            "schema_version: 3\ncommand_policy:\n  rules:\n    git:\n      denied: ['']\n",
            "5:16",
            "each entry of 'denied' must be a run of words",
        ),
        (
            "schema_version: 3\nversion: v1\n",
            "2:1",
            "'version' is a runtime policy's key, and this file is an Engineering Runtime policy",
        ),
        (
            "schema_version: 3\nallowed_binaries: git\n",
            "2:19",
            "'allowed_binaries' must be a list",
        ),
    ],
)
def test_a_key_that_cannot_be_honoured_is_an_error_naming_it(
    cli: Callable[..., Result], tmp_path: Path, text: str, position: str, said: str
) -> None:
    er = write(tmp_path / "er.yaml", text)
    for args in (["policy", "import", str(er)], ["policy", "show"]):
        result = cli(*args, extra_env={"RUNTIME_POLICY_FILE": str(er)})
        assert result.code == 2, (args, result.stdout)
        assert f"{er}:{position}: error: {said}" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


# -- runtime policy import -------------------------------------------------------------------


def test_import_prints_the_runtime_policy_it_maps_to(
    cli: Callable[..., Result], er_file: Path, tmp_path: Path
) -> None:
    result = cli("policy", "import", str(er_file))
    assert result.code == 0, result.stderr
    text = result.stdout
    assert "version: v1\n" in text
    assert "# from allowed_binaries: ER's list is the whole list: nothing else runs\n" in text
    assert "only_binaries: [git, gh, bash]\n" in text
    assert "denied_arguments:\n  git:\n    - [tag, -d]\n    - [push, --tags]\n" in text
    assert 'denied_operations: ["files delete", "github repo create"]\n' in text
    assert "file_edits:\n  max_files: 10\n" in text
    assert "allowed_destructive" not in text
    assert "allowed_binaries entry 'bash' has no effect" in result.stderr
    # saved as a runtime policy, it is the same effective policy as the ER file
    converted = write(tmp_path / "converted.yaml", text)
    as_er = _show(
        cli("-o", "json", "policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(er_file)})
    )
    as_runtime = _show(
        cli("-o", "json", "policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(converted)})
    )

    def same(doc: dict[str, Any], source: str) -> str:
        return json.dumps({k: v for k, v in doc.items() if k != "warnings"}).replace(
            json.dumps(source)[1:-1], "USER"
        )

    assert same(as_er, str(er_file)) == same(as_runtime, str(converted))


def test_import_as_json(cli: Callable[..., Result]) -> None:
    example = EXAMPLES / "engineering-runtime-policy.yaml"
    doc = cli("-o", "json", "policy", "import", str(example)).json()
    check_schema(doc, "policy-import")
    assert doc["policy"]["only_binaries"] == ["git", "gh", "jq"]
    assert doc["policy"]["denied_operations"] == [
        "files delete",
        "github repo create",
        "github api DELETE *",
    ]
    assert doc["origins"]["denied_operations"] == ["providers.PROVIDER.denied"]
    assert doc["origins"]["file_edits"] == ["file_policy.max_edit_*"]
    assert doc["text"].startswith("# A runtime policy, converted by `runtime policy import`")


def test_import_of_what_is_no_er_policy(cli: Callable[..., Result], tmp_path: Path) -> None:
    own = write(tmp_path / "own.yaml", "version: v1\nallowed_binaries: [make]\n")
    result = cli("policy", "import", str(own))
    assert result.code == 2
    assert f"{own}:1:1: not an Engineering Runtime policy file" in result.stderr
    assert "it is a runtime policy already (version: v1)" in result.stderr
    missing = cli("policy", "import", str(tmp_path / "nope.yaml"))
    assert missing.code == 2 and "no such file" in missing.stderr


def test_what_import_prints_reads_back_as_written(
    cli: Callable[..., Result], tmp_path: Path
) -> None:
    # words YAML would take for something else, or that start with its indicators
    tricky = write(
        tmp_path / "tricky.yaml",
        "schema_version: 3\n"
        'allowed_binaries: ["true", "false", "null", "yes", git, "2to3"]\n'
        "command_policy:\n"
        "  rules:\n"
        "    git:\n"
        '      denied: ["push +*", "push :*", "clean -fd", "log --format=%H #x", "tag  -d"]\n'
        "file_policy:\n"
        '  write_roots: ["./out dir", "~/reports", "[x]"]\n'
        "providers:\n"
        "  github:\n"
        '    denied: ["api PUT /repos/*/*/topics"]\n',
    )
    printed = cli("-o", "json", "policy", "import", str(tricky)).json()
    converted = write(tmp_path / "converted.yaml", printed["text"])
    shown = cli("-o", "json", "policy", "show", extra_env={"RUNTIME_POLICY_FILE": str(converted)})
    doc = _show(shown)
    assert doc["only_binaries"]["value"] == ["true", "false", "null", "yes", "git", "2to3"]
    runs = [d["run"] for d in doc["denied_arguments"] if d["source"] == str(converted)]
    # push +* and push :* are the default's already, and stay its
    assert runs == [
        ["clean", "-fd"],
        ["log", "--format=%H", "#x"],
        ["tag", "-d"],
    ]
    assert doc["write_roots"]["value"] == ["./out dir", "~/reports", "[x]"]
    assert {"operation": "github api put /repos/*/*/topics", "source": str(converted)} in doc[
        "denied_operations"
    ]
